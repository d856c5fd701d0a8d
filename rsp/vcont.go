package rsp

import (
	"errors"
	"fmt"
	"strings"
)

// parseVCont parses the actions of vCont;<action>[:thread];...
func parseVCont(arg string) (Command, error) {
	n := strings.Count(arg, ";") + 1
	if n > maxVContActions {
		return nil, fmt.Errorf("%d actions, over %d", n, maxVContActions)
	}
	actions := make([]VContAction, 0, n)
	i := 0
	for field := range strings.SplitSeq(arg, ";") {
		i++
		a, err := parseVContAction(field)
		if err != nil {
			return nil, fmt.Errorf("action %d %s: %w", i, quote(field), err)
		}
		actions = append(actions, a)
	}
	return VCont{Actions: actions}, nil
}

// parseVContAction parses c, s, t, C<sig>, S<sig> or r<start>,<end>, then
// an optional :<thread>.
func parseVContAction(field string) (VContAction, error) {
	head, threadField, hasThread := strings.Cut(field, ":")
	if head == "" {
		return VContAction{}, errors.New("empty action")
	}
	a := VContAction{Kind: head[0], Thread: AllThreads}
	arg := head[1:]
	var err error
	switch a.Kind {
	case 'c', 's', 't':
		if arg != "" {
			err = fmt.Errorf("%q after %q", arg, a.Kind)
		}
	case 'C', 'S':
		a.Signal, err = parseSignal(arg)
	case 'r':
		a.RangeStart, a.RangeEnd, err = parsePair(arg, "range start", "range end")
		if err == nil && a.RangeStart > a.RangeEnd {
			err = fmt.Errorf("range [%#x, %#x) ends before it starts", a.RangeStart, a.RangeEnd)
		}
	default:
		err = fmt.Errorf("unknown action %q", a.Kind)
	}
	if err != nil {
		return VContAction{}, err
	}
	if hasThread {
		if a.Thread, err = parseThreadID(threadField); err != nil {
			return VContAction{}, err
		}
	}
	return a, nil
}
