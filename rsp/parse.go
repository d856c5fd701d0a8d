package rsp

import (
	"errors"
	"fmt"
	"strings"
)

// Bounds on what a packet may ask for (doc.go, "Bounds").
const (
	maxRegister     = 4095
	maxBreakSize    = 1 << 20
	maxVContActions = 1024
	maxFeatures     = 256
	maxSyscalls     = 1024
)

// Parse parses one packet's payload, as Conn.Read returns it. A packet it
// does not know is Unknown, not an error: an error means a packet it knows
// is malformed, and names the packet. The Command does not alias payload.
func Parse(payload []byte) (Command, error) {
	p := string(payload)
	if c, ok := bare[p]; ok {
		return c, nil
	}
	for _, k := range withArgs {
		arg, ok := strings.CutPrefix(p, k.prefix)
		if !ok {
			continue
		}
		c, err := k.parse(arg)
		if err != nil {
			return nil, fmt.Errorf("rsp: packet %s: %w", quote(p), err)
		}
		if c != nil {
			return c, nil
		}
		break
	}
	return Unknown{Payload: p}, nil
}

// bare are the packets without arguments.
var bare = map[string]Command{
	"?":               StopReason{},
	"g":               ReadRegisters{},
	"k":               Kill{},
	"D":               Detach{},
	"bc":              ReverseContinue{},
	"bs":              ReverseStep{},
	"vCont?":          VContQuery{},
	"vMustReplyEmpty": MustReplyEmpty{},
	"QStartNoAckMode": StartNoAckMode{},
	"qSupported":      QSupported{},
	"qAttached":       QueryAttached{},
	"qC":              QueryCurrentThread{},
	"qfThreadInfo":    ThreadInfoFirst{},
	"qsThreadInfo":    ThreadInfoNext{},
	"qOffsets":        QueryOffsets{},
	"qTStatus":        QueryTStatus{},
	"qSymbol::":       QuerySymbol{},
}

// withArgs are the packets with arguments, by the prefix naming them,
// tried in order. A parser returns a nil Command for a variant it does not
// know (a qXfer write, a Z of a sixth kind): that packet is Unknown.
var withArgs = []struct {
	prefix string
	parse  func(arg string) (Command, error)
}{
	{"qSupported:", parseSupported},
	{"QCatchSyscalls:", parseCatchSyscalls},
	{"qXfer:", parseXfer},
	{"qRcmd,", parseMonitor},
	{"qAttached:", parseAttached},
	{"qThreadExtraInfo,", parseThreadExtraInfo},
	{"vCont;", parseVCont},
	{"vFile:", parseFile},
	{"vKill;", parseKill},
	{"D;", parseDetach},
	{"H", parseSetThread},
	{"T", parseThreadAlive},
	{"G", parseWriteRegisters},
	{"p", parseReadRegister},
	{"P", parseWriteRegister},
	{"m", parseReadMemory},
	{"M", parseWriteMemoryHex},
	{"X", parseWriteMemoryBinary},
	{"Z", parseInsertBreak},
	{"z", parseRemoveBreak},
	{"c", parseContinue},
	{"s", parseStep},
	{"C", parseContinueWithSignal},
	{"S", parseStepWithSignal},
}

func parseSupported(arg string) (Command, error) {
	if arg == "" {
		return QSupported{}, nil
	}
	if n := strings.Count(arg, ";") + 1; n > maxFeatures {
		return nil, fmt.Errorf("%d features, over %d", n, maxFeatures)
	}
	return QSupported{Features: strings.Split(arg, ";")}, nil
}

// parseCatchSyscalls parses 0, 1, or 1 and the calls' numbers, each after
// a ';'.
func parseCatchSyscalls(arg string) (Command, error) {
	on, list, listed := strings.Cut(arg, ";")
	switch {
	case on == "0" && !listed:
		return CatchSyscalls{}, nil
	case on == "0":
		return nil, errors.New("system calls listed to catch none")
	case on != "1":
		return nil, fmt.Errorf("%q is neither 0 nor 1", on)
	case !listed:
		return CatchSyscalls{Enable: true}, nil
	}
	if n := strings.Count(list, ";") + 1; n > maxSyscalls {
		return nil, fmt.Errorf("%d system calls, over %d", n, maxSyscalls)
	}
	c := CatchSyscalls{Enable: true}
	for _, f := range strings.Split(list, ";") {
		nr, err := parseHex(f)
		if err != nil {
			return nil, fmt.Errorf("system call number: %w", err)
		}
		c.Calls = append(c.Calls, nr)
	}
	return c, nil
}

// parseXfer parses <object>:read:<annex>:<offset>,<length>. The annex is
// everything up to the last colon.
func parseXfer(arg string) (Command, error) {
	object, rest, ok := strings.Cut(arg, ":")
	if !ok {
		return nil, errors.New("missing ':' after the object")
	}
	op, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, errors.New("missing ':' after the operation")
	}
	if op != "read" {
		return nil, nil
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return nil, errors.New("missing ':' before the offset")
	}
	offset, length, err := parsePair(rest[i+1:], "offset", "length")
	if err != nil {
		return nil, err
	}
	return XferRead{Object: object, Annex: rest[:i], Offset: offset, Length: min(length, MaxPacket)}, nil
}

func parseMonitor(arg string) (Command, error) {
	b, err := parseHexBytes(arg)
	if err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	return Monitor{Command: string(b)}, nil
}

func parseAttached(arg string) (Command, error) {
	pid, err := parsePID(arg)
	return QueryAttached{PID: pid}, err
}

func parseKill(arg string) (Command, error) {
	pid, err := parsePID(arg)
	return Kill{PID: pid}, err
}

func parseDetach(arg string) (Command, error) {
	pid, err := parsePID(arg)
	return Detach{PID: pid}, err
}

func parsePID(s string) (int, error) {
	pid, err := parseBounded(s, maxID)
	if err != nil {
		return 0, fmt.Errorf("pid: %w", err)
	}
	return int(pid), nil
}

func parseThreadExtraInfo(arg string) (Command, error) {
	t, err := parseThreadID(arg)
	return ThreadExtraInfo{Thread: t}, err
}

func parseThreadAlive(arg string) (Command, error) {
	t, err := parseThreadID(arg)
	return ThreadAlive{Thread: t}, err
}

// parseSetThread parses H<op><thread>; ops other than g and c are old or
// foreign, and Unknown.
func parseSetThread(arg string) (Command, error) {
	if arg == "" || (arg[0] != 'g' && arg[0] != 'c') {
		return nil, nil
	}
	t, err := parseThreadID(arg[1:])
	return SetThread{Op: arg[0], Thread: t}, err
}

func parseWriteRegisters(arg string) (Command, error) {
	data, err := parseHexBytes(arg)
	if err != nil {
		return nil, fmt.Errorf("registers: %w", err)
	}
	if data == nil {
		return nil, errors.New("no register data")
	}
	return WriteRegisters{Data: data}, nil
}

func parseRegister(s string) (int, error) {
	n, err := parseBounded(s, maxRegister)
	if err != nil {
		return 0, fmt.Errorf("register: %w", err)
	}
	return int(n), nil
}

func parseReadRegister(arg string) (Command, error) {
	reg, err := parseRegister(arg)
	return ReadRegister{Reg: reg}, err
}

func parseWriteRegister(arg string) (Command, error) {
	regField, valueField, ok := strings.Cut(arg, "=")
	if !ok {
		return nil, errors.New("missing '='")
	}
	reg, err := parseRegister(regField)
	if err != nil {
		return nil, err
	}
	value, err := parseHexBytes(valueField)
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	if value == nil {
		return nil, errors.New("empty value")
	}
	return WriteRegister{Reg: reg, Value: value}, nil
}

// parseReadMemory clamps the length rather than refusing it: a reply
// may be short, and gdb asks again for the rest.
func parseReadMemory(arg string) (Command, error) {
	addr, length, err := parsePair(arg, "address", "length")
	if err != nil {
		return nil, err
	}
	length = min(length, MaxPacket/2)
	if err := checkRange(addr, length); err != nil {
		return nil, err
	}
	return ReadMemory{Addr: addr, Length: length}, nil
}

func parseWriteMemoryHex(arg string) (Command, error) {
	return parseWriteMemory(arg, parseHexBytes)
}

// parseWriteMemoryBinary takes X's data as it is: Conn.Read unescaped it.
func parseWriteMemoryBinary(arg string) (Command, error) {
	return parseWriteMemory(arg, func(s string) ([]byte, error) {
		if s == "" {
			return nil, nil
		}
		return []byte(s), nil
	})
}

// parseWriteMemory parses <addr>,<length>:<data>, the data decoded by
// decodeData; length must be the data's.
func parseWriteMemory(arg string, decodeData func(string) ([]byte, error)) (Command, error) {
	head, dataField, ok := strings.Cut(arg, ":")
	if !ok {
		return nil, errors.New("missing ':'")
	}
	addr, length, err := parsePair(head, "address", "length")
	if err != nil {
		return nil, err
	}
	data, err := decodeData(dataField)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if length != uint64(len(data)) {
		return nil, fmt.Errorf("length %#x, but %d bytes of data", length, len(data))
	}
	if err := checkRange(addr, length); err != nil {
		return nil, err
	}
	return WriteMemory{Addr: addr, Data: data}, nil
}

func parseInsertBreak(arg string) (Command, error) {
	b, known, err := parseBreak(arg)
	if !known || err != nil {
		return nil, err
	}
	return b, nil
}

func parseRemoveBreak(arg string) (Command, error) {
	b, known, err := parseBreak(arg)
	if !known || err != nil {
		return nil, err
	}
	return RemoveBreak(b), nil
}

// parseBreak parses <kind>,<addr>,<size>[;...]. A kind gdb's manual does
// not define is not known: the stub answers "" to it.
func parseBreak(arg string) (b InsertBreak, known bool, err error) {
	fields, _, _ := strings.Cut(arg, ";") // conditions and commands: ignored
	kindField, rest, hasComma := strings.Cut(fields, ",")
	if len(kindField) != 1 || kindField[0] < '0' || kindField[0] > '4' {
		return InsertBreak{}, false, nil
	}
	if !hasComma {
		return InsertBreak{}, true, errors.New("missing comma")
	}
	addr, size, err := parsePair(rest, "address", "size")
	if err != nil {
		return InsertBreak{}, true, err
	}
	if size > maxBreakSize {
		return InsertBreak{}, true, fmt.Errorf("size %#x, over %#x", size, maxBreakSize)
	}
	if err := checkRange(addr, size); err != nil {
		return InsertBreak{}, true, err
	}
	return InsertBreak{Kind: BreakKind(kindField[0] - '0'), Addr: addr, Size: int(size)}, true, nil
}

func parseContinue(arg string) (Command, error) {
	addr, err := parseOptionalAddr(arg)
	return Continue{Addr: addr}, err
}

func parseStep(arg string) (Command, error) {
	addr, err := parseOptionalAddr(arg)
	return Step{Addr: addr}, err
}

func parseContinueWithSignal(arg string) (Command, error) {
	sig, addr, err := parseSignalAddr(arg)
	return ContinueWithSignal{Signal: sig, Addr: addr}, err
}

func parseStepWithSignal(arg string) (Command, error) {
	sig, addr, err := parseSignalAddr(arg)
	return StepWithSignal{Signal: sig, Addr: addr}, err
}

// parseSignalAddr parses <sig>[;<addr>].
func parseSignalAddr(arg string) (Signal, *uint64, error) {
	sigField, addrField, hasAddr := strings.Cut(arg, ";")
	sig, err := parseSignal(sigField)
	if err != nil || !hasAddr {
		return sig, nil, err
	}
	addr, err := parseHex(addrField)
	if err != nil {
		return 0, nil, fmt.Errorf("address: %w", err)
	}
	return sig, &addr, nil
}
