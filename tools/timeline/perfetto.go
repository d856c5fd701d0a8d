package timeline

import (
	"bufio"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Perfetto's trace format (protos/perfetto/trace in Perfetto's sources):
// a Trace is a sequence of TracePacket fields, each length-delimited, so
// packets are written one by one as they are made. The field numbers are
// the protos'.
const (
	tracePacket = 1 // Trace.packet

	packetTimestamp     = 8  // TracePacket.timestamp, ns
	packetSequenceID    = 10 // TracePacket.trusted_packet_sequence_id
	packetTrackEvent    = 11 // TracePacket.track_event
	packetInternedData  = 12 // TracePacket.interned_data
	packetSequenceFlags = 13 // TracePacket.sequence_flags
	packetTrackDesc     = 60 // TracePacket.track_descriptor

	seqIncrementalStateCleared = 1 // SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED
	seqNeedsIncrementalState   = 2 // SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE

	trackUUID       = 1 // TrackDescriptor.uuid
	trackName       = 2 // TrackDescriptor.name
	trackProcess    = 3 // TrackDescriptor.process
	trackParentUUID = 5 // TrackDescriptor.parent_uuid

	processPID  = 1 // ProcessDescriptor.pid
	processName = 6 // ProcessDescriptor.process_name

	eventType      = 9  // TrackEvent.type
	eventNameIID   = 10 // TrackEvent.name_iid
	eventTrackUUID = 11 // TrackEvent.track_uuid

	sliceBegin = 1 // TrackEvent.Type.TYPE_SLICE_BEGIN
	sliceEnd   = 2 // TrackEvent.Type.TYPE_SLICE_END

	internedEventNames = 2 // InternedData.event_names
	eventNameIIDField  = 1 // EventName.iid
	eventNameName      = 2 // EventName.name
)

// sequenceID is the one packet sequence the trace is: interned names are
// valid along it from its first packet, which clears the state.
const sequenceID = 1

// protoWriter writes TracePackets; the first error sticks.
type protoWriter struct {
	w     *bufio.Writer
	names map[string]uint64 // interned event names
	first bool              // no packet written yet
	buf   []byte
	err   error
}

// writeProto writes the processes and tracks as Perfetto's protobuf
// trace: a track descriptor per process and per track (uuids: process
// i+1 has uuid i+1, its tracks follow from 1<<32), then each slice as a
// begin and an end event on its track.
func writeProto(w *bufio.Writer, procs []string, tracks []track, quantum, origin time.Duration) error {
	p := &protoWriter{w: w, names: map[string]uint64{}, first: true}
	for i, name := range procs {
		var proc []byte
		proc = protowire.AppendTag(proc, processPID, protowire.VarintType)
		proc = protowire.AppendVarint(proc, uint64(i+1))
		proc = protowire.AppendTag(proc, processName, protowire.BytesType)
		proc = protowire.AppendString(proc, name)
		var desc []byte
		desc = protowire.AppendTag(desc, trackUUID, protowire.VarintType)
		desc = protowire.AppendVarint(desc, uint64(i+1))
		desc = protowire.AppendTag(desc, trackProcess, protowire.BytesType)
		desc = protowire.AppendBytes(desc, proc)
		p.descriptor(desc)
	}
	for i, t := range tracks {
		uuid := uint64(1)<<32 + uint64(i)
		var desc []byte
		desc = protowire.AppendTag(desc, trackUUID, protowire.VarintType)
		desc = protowire.AppendVarint(desc, uuid)
		desc = protowire.AppendTag(desc, trackName, protowire.BytesType)
		desc = protowire.AppendString(desc, t.name)
		desc = protowire.AppendTag(desc, trackParentUUID, protowire.VarintType)
		desc = protowire.AppendVarint(desc, uint64(t.pid))
		p.descriptor(desc)
		for _, s := range merge(t.slices, quantum) {
			p.event(s.Start-origin, uuid, sliceBegin, s.name)
			p.event(s.End-origin, uuid, sliceEnd, "")
		}
	}
	return p.err
}

// descriptor writes a packet holding a TrackDescriptor.
func (p *protoWriter) descriptor(desc []byte) {
	var pkt []byte
	pkt = protowire.AppendTag(pkt, packetTrackDesc, protowire.BytesType)
	pkt = protowire.AppendBytes(pkt, desc)
	p.packet(pkt, 0)
}

// event writes a TrackEvent at ts on track: a slice's begin named name
// (interned in the same packet the first time), or its end.
func (p *protoWriter) event(ts time.Duration, track uint64, typ uint64, name string) {
	var pkt, ev []byte
	ev = protowire.AppendTag(ev, eventType, protowire.VarintType)
	ev = protowire.AppendVarint(ev, typ)
	ev = protowire.AppendTag(ev, eventTrackUUID, protowire.VarintType)
	ev = protowire.AppendVarint(ev, track)
	if typ == sliceBegin {
		iid, ok := p.names[name]
		if !ok {
			iid = uint64(len(p.names) + 1)
			p.names[name] = iid
			var en, interned []byte
			en = protowire.AppendTag(en, eventNameIIDField, protowire.VarintType)
			en = protowire.AppendVarint(en, iid)
			en = protowire.AppendTag(en, eventNameName, protowire.BytesType)
			en = protowire.AppendString(en, name)
			interned = protowire.AppendTag(interned, internedEventNames, protowire.BytesType)
			interned = protowire.AppendBytes(interned, en)
			pkt = protowire.AppendTag(pkt, packetInternedData, protowire.BytesType)
			pkt = protowire.AppendBytes(pkt, interned)
		}
		ev = protowire.AppendTag(ev, eventNameIID, protowire.VarintType)
		ev = protowire.AppendVarint(ev, iid)
	}
	pkt = protowire.AppendTag(pkt, packetTimestamp, protowire.VarintType)
	pkt = protowire.AppendVarint(pkt, uint64(max(ts, 0)))
	pkt = protowire.AppendTag(pkt, packetTrackEvent, protowire.BytesType)
	pkt = protowire.AppendBytes(pkt, ev)
	p.packet(pkt, seqNeedsIncrementalState)
}

// packet writes one TracePacket with the fields in body, on the trace's
// sequence; the first packet also clears the sequence's interned state.
func (p *protoWriter) packet(body []byte, flags uint64) {
	if p.err != nil {
		return
	}
	if p.first {
		flags |= seqIncrementalStateCleared
		p.first = false
	}
	body = protowire.AppendTag(body, packetSequenceID, protowire.VarintType)
	body = protowire.AppendVarint(body, sequenceID)
	if flags != 0 {
		body = protowire.AppendTag(body, packetSequenceFlags, protowire.VarintType)
		body = protowire.AppendVarint(body, flags)
	}
	p.buf = protowire.AppendTag(p.buf[:0], tracePacket, protowire.BytesType)
	p.buf = protowire.AppendBytes(p.buf, body)
	_, p.err = p.w.Write(p.buf)
}
