package devices_test

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/vmm/devices"
)

// requireRoundTrip checks that a state survives JSON and gob unchanged.
// Every field of s must be non-zero, so that a field an encoding drops (or
// the zero value a decoder leaves) cannot pass unnoticed.
func requireRoundTrip[S any](t *testing.T, s S) {
	t.Helper()
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		require.False(t, v.Field(i).IsZero(), "field %s of the sample must be non-zero", v.Type().Field(i).Name)
	}
	j, err := json.Marshal(s)
	require.NoError(t, err)
	var fromJSON S
	require.NoError(t, json.Unmarshal(j, &fromJSON))
	require.Equal(t, s, fromJSON, "JSON %s", j)

	var g bytes.Buffer
	require.NoError(t, gob.NewEncoder(&g).Encode(s))
	var fromGob S
	require.NoError(t, gob.NewDecoder(&g).Decode(&fromGob))
	require.Equal(t, s, fromGob)
}

// requireStateError checks that err is a *devices.StateError naming field,
// and that its message names it too.
func requireStateError(t *testing.T, err error, device, field string) {
	t.Helper()
	var se *devices.StateError
	require.ErrorAs(t, err, &se)
	require.Equal(t, device, se.Device)
	require.Equal(t, field, se.Field)
	require.Contains(t, err.Error(), field)
}

// readPort is a 4-byte IN from dev's port, as the guest does it.
func readPort(dev devices.PortDevice, port uint16) uint32 {
	b := make([]byte, 4)
	dev.PortRead(port, b)
	return binary.LittleEndian.Uint32(b)
}
