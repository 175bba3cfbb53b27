'use strict'

// Runs wherever call quality is worked out or read: a stream's packet
// interval (ms of media per RTP packet), which sizes the worst-window's 10 s
// of media in packets and the codec's packetization delay. RTCP does not
// carry it; it is known from, best first: the call's SDP (`a=ptime`, over
// HEP), the reported sender's SRs (Δ packet count against Δ RTP timestamp
// at its clock rate), the reporter's RRs (Δ extended highest sequence over
// Δ arrival), else the planning codec's usual interval
// (docs/call-quality.md, Packet interval).

/** The span of media of a quality window (docs/call-quality.md, worst window). */
const WINDOW_MS = 10000
/** Where a packet interval came from, by precedence (a side keeps the surest, $max by rank). */
const PACKET_RANK = Object.freeze({ codec: 0, 'receiver-reports': 1, 'sender-reports': 2, sdp: 3 })
const MIN_SPAN_S = 1 // SRs at least this far apart measure it
const MIN_RR_SPAN_MS = 2000 // RRs arrive with the path's jitter: a longer span
const SETTLED = 0.02 // a new measure within this of the one held keeps it (the window's span stays put)
const MAX_WINDOWS_SPANNED = 128 // an interval over more windows is booked to the one it ends in
// A measure outside these is not a packet interval (hold, a report's pace): RTP audio packs 0.5–200 ms.
const MIN_PACKET_MS = 0.5
const MAX_PACKET_MS = 200

/**
 * The interval held after a measure of `measured` ms: a whole ms when
 * within SETTLED of one (packet intervals mostly are; a measure is off by
 * a packet counted either side of an SR), else to 0.1 ms; the one held
 * stays unless the new is more than SETTLED shorter. The shortest stands
 * because silence suppression and hold only ever lengthen a measure (fewer
 * packets in the same time); they never shorten it.
 */
function settle (held, measured) {
  if (!(measured >= MIN_PACKET_MS && measured <= MAX_PACKET_MS)) return held
  const whole = Math.round(measured)
  const rounded = Math.abs(measured - whole) <= whole * SETTLED ? whole : Math.round(measured * 10) / 10
  if (held > 0 && rounded >= held * (1 - SETTLED)) return held
  return rounded
}

/**
 * From two SRs of one sender (`first` older than `ref` by MIN_SPAN_S or
 * more): the RTP time between them at `clockRate` (NTP time when the
 * clock is not known yet) over the packets sent between them.
 */
function fromSenderReports (held, first, ref, clockRate) {
  const packets = (ref.packets - first.packets) >>> 0
  if (!(packets > 0) || !(ref.ntp - first.ntp >= MIN_SPAN_S)) return held
  const seconds = clockRate > 0 ? ((ref.rtp - first.rtp) >>> 0) / clockRate : ref.ntp - first.ntp
  return settle(held, seconds * 1000 / packets)
}

/**
 * From a reporter's reports on one side: the arrival time between two of
 * its reports at least MIN_RR_SPAN_MS apart over the sequence numbers
 * between them (the shortest stands: see settle). The anchor resets when
 * the reporter starts over.
 */
function fromReceiverReports (side, seq, at) {
  if (side.anchorAt === undefined || !(seq >= side.anchorSeq)) {
    side.anchorSeq = seq
    side.anchorAt = at
    return
  }
  if (at - side.anchorAt < MIN_RR_SPAN_MS) return
  if (seq > side.anchorSeq) side.packetMs = settle(side.packetMs, (at - side.anchorAt) / (seq - side.anchorSeq))
  side.anchorSeq = seq
  side.anchorAt = at
}

/**
 * The packet interval a report is scored and windowed with: the media's
 * (SDP, SRs), else the side's own from its reports, else the codec's.
 * `{ rank, ms, source }`, the shape a side's statistics keep ($max).
 */
function packetOf (media, side) {
  if (media.packet.rank === PACKET_RANK.codec && side.packetMs > 0) return { rank: PACKET_RANK['receiver-reports'], ms: side.packetMs, source: 'receiver-reports' }
  return media.packet
}

/**
 * The windows of media (`span` packets, WINDOW_MS of them, by sequence
 * number) the interval (`from`, `to`] covers, as [index, packets of the
 * interval in it] pairs: its loss and delay are apportioned by them. A
 * report without a measured interval (no `from`), or an interval over
 * more than MAX_WINDOWS_SPANNED windows, is booked whole to the window it
 * ends in.
 */
function windowsOf (span, from, to) {
  const last = Math.floor(to / span)
  if (from === undefined || !(to > from)) return [[last, 0]]
  const first = Math.floor((from + 1) / span)
  if (last - first >= MAX_WINDOWS_SPANNED) return [[last, to - from]]
  const shares = []
  for (let index = first; index <= last; index++) {
    const start = Math.max(from + 1, index * span)
    const end = Math.min(to, (index + 1) * span - 1)
    shares.push([index, end - start + 1])
  }
  return shares
}

/** Packets in WINDOW_MS of media at `packetMs` per packet. */
function windowSpan (packetMs) {
  return Math.max(1, Math.round(WINDOW_MS / packetMs))
}

module.exports = { WINDOW_MS, MAX_WINDOWS_SPANNED, PACKET_RANK, settle, fromSenderReports, fromReceiverReports, packetOf, windowSpan, windowsOf }
