package vmm

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/vmm/devices"
)

// devStateAsm leaves state in several devices, then idles until the timer
// it programmed wakes it, and powers off.
var devStateAsm = `
.globl _start, reprise_vectors
_start:
	mov $0x3ff, %dx
	mov $0x5a, %al
	out %al, %dx              /* serial scratch */
	mov $0x3fb, %dx
	mov $0x03, %al
	out %al, %dx              /* serial LCR: 8N1 */
	mov $0x530, %dx
	mov $0x4, %eax
	out %eax, %dx             /* mask the disk's line */
	mov $0x520, %dx
	mov $2500, %eax
	out %eax, %dx             /* timer period: 2.5 ms */
	sti
	hlt
	cli
	mov $0x501, %dx
	xor %eax, %eax
	out %eax, %dx

` + kvmtest.Vectors(0x20, `	iretq                     /* vector 0x20: the timer */`)

// savingEngine runs live and saves the devices when the guest first idles.
type savingEngine struct {
	live
	saved *DeviceState
	err   error
}

func (e *savingEngine) Halt() error {
	if e.saved == nil && e.err == nil {
		e.saved, e.err = e.m.SaveDevices()
	}
	return e.live.Halt()
}

// A machine booted with saved device state has, before it runs, the
// devices of the machine that saved it; a forged state is refused by New.
func TestDeviceStateRestores(t *testing.T) {
	eng := &savingEngine{}
	m := asmMachine(t, devStateAsm, Config{Engine: eng})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := m.Run(ctx)
	require.NoError(t, err)
	require.NoError(t, eng.err)
	saved := eng.saved
	require.NotNil(t, saved)
	require.Equal(t, uint8(0x5a), saved.Serial.Scratch)
	require.Equal(t, uint8(0x03), saved.Serial.LCR)
	require.Equal(t, uint32(0x4), saved.Intc.Mask)
	require.Equal(t, 2500*time.Microsecond, saved.Timer.Period)

	raw, err := json.Marshal(saved)
	require.NoError(t, err)
	var back DeviceState
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, *saved, back)

	restored, err := New(Config{Image: m.Image(), Devices: &back})
	require.NoError(t, err)
	defer restored.Close()
	again, err := restored.SaveDevices()
	require.NoError(t, err)
	require.Equal(t, saved, again)

	forged := *saved
	forged.Serial.IER = 0xFF
	_, err = New(Config{Image: m.Image(), Devices: &forged})
	var se *devices.StateError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "IER", se.Field)
}
