'use strict'

const { defineCollector } = require('../../lib/collector/define-collector')
const sinks = require('../../lib/collector/sinks')
const DecodeError = require('../../exceptions/decode-error')
const { decodeNetflow, sequenceGap, netflowRefusal } = require('./netflow-decoder')
const { READ_PAST } = require('./shapes')

// A datagram's options records and exporter summary ride after its flows in
// the records decode gives (so a flow's place in its datagram is its place
// there); the sinks tell them apart by this marker: 'options', 'exporter',
// none for a flow.
const KIND = Symbol('kind')
const isFlow = (record) => record[KIND] === undefined
const MINUTE_MS = 60000
// Flow and options records one datagram may bring: past what exporters send
// (v5: 30; v9 and IPFIX: about 70 records of 20 bytes in a 1,500-byte
// datagram, 450 in a 9,000-byte one), and what one datagram may cost: the
// codec stops reading there (netflow-too-many-records), where a 65 KB
// datagram of 1-byte records was read whole (65,000 records) to be refused.
const MAX_RECORDS = 999
// How far back a datagram's sequence may step and be a late one (reordered
// or sent twice) rather than the exporter's restart: about 1,000 datagrams,
// in the version's unit (v5 flows, v9 export packets, IPFIX data records).
const LATE_WINDOW = Object.freeze({ 5: 30000, 9: 1000, 10: 100000 })
// The gaps a domain remembers, so that the datagram that fills one late is
// no longer counted lost: the last few (a reorder is a few datagrams deep).
const MAX_GAPS = 16
// v5 and v9: how far an exporter's uptime may drift from its clock between
// two datagrams (v9's export time is in whole seconds; an NTP step) before
// it says the exporter restarted in between.
const UPTIME_SLACK_MS = 30000

/**
 * NetFlow v5, v9 and IPFIX (RFC 7011) on UDP 2055, from routers, switches,
 * softflowd, nprobe, pmacct. The first stateful built-in collector: v9 and
 * IPFIX templates are kept state (`keep`, per exporter address and port), written
 * with the flows and read by a worker's heir, so a worker's death costs no
 * template. Each datagram is refused by name (netflow/reasons.js) or
 * stored whole:
 * - `flows`: one document per flow record (the codec's record shape, times
 *   as Dates, with the exporter, version and observation domain; a biflow's
 *   reverse direction in its reverse fields);
 * - `flow_minutes`: per UTC minute of a flow's end (else of its arrival),
 *   exporter, source and destination: `bytes`, `packets`, `flows` (a
 *   biflow counts in both directions, as two one-way flows would), and
 *   `lastSeen`, the last arrival that wrote to it, which retention ages it by;
 * - `interface_minutes`: the same per exporter and input/output interface;
 * - `exporters`: per exporter, version and domain: `datagrams`, `flows`
 *   and the exporter-side loss its sequence numbers show (`lost`: flows for
 *   v5, export packets for v9, data records for IPFIX, less what came late
 *   into a gap; `late`: datagrams that came behind the sequence, out of
 *   order or twice; `restarts`: see exporterSummary);
 * - `flow_options`: per exporter, domain, options template and scope
 *   values, the options record last sent (interface names, sampling).
 * A data set whose template the exporter has not sent yet refuses its
 * datagram (`netflow-unknown-template`): exporters send templates every few
 * datagrams, and a datagram is never stored in part.
 */
module.exports = defineCollector({
  name: 'netflow',
  description: 'NetFlow v5, v9 and IPFIX flows over UDP: every flow record once, per-minute totals per source/destination and interface, exporter-side loss',
  // A datagram is one export message, read whole; over TCP (IPFIX only,
  // RFC 7011 §10.4) each message carries its length.
  listen: { protocol: 'udp', port: 2055, framing: 'ipfix', split: 'none', fixed: ['split', 'framing'] },
  // Templates and sequence numbers belong to a transport session (RFC 7011
  // §8: for UDP, the exporter's address and port) and its domain: two
  // exporters behind one address (two softflowd on a router, or a NAT) had
  // each other's templates. Messages still meet by address (the hash), so
  // one session's are in one worker.
  keep: {
    scope: (message) => { const remote = message.rinfo || message.remote; return remote ? `${remote.address}|${remote.port}` : '' },
    // Versions before transport sessions kept an exporter's templates by its address: read for a session with none yet.
    scopeBefore: (scope) => scope.slice(0, scope.lastIndexOf('|'))
  },
  maxRecords: MAX_RECORDS + 1, // and the exporter summary
  decode: (message, settings, { kept, remote }) => {
    const datagram = decodeNetflow(message.data, { templates: kept, maxRecords: MAX_RECORDS })
    if (datagram instanceof DecodeError) return datagram
    if (datagram.unknownTemplates > 0) {
      passOver(kept, datagram)
      return netflowRefusal('netflow-unknown-template')
    }
    const exporter = remote ? remote.address : ''
    const records = datagram.records.map((flow) => flowDocument(flow, exporter, datagram))
    for (const options of datagram.options) records.push(optionsRecord(options, exporter, datagram))
    records.push(exporterSummary(kept, exporter, datagram))
    return records
  },
  tally: {
    versions: (record) => isFlow(record) ? `v${record.version}` : null,
    // Field values read past, per element: what an exporter sends that no document holds.
    unknownFields: (record) => record[READ_PAST] || null
  },
  sinks: [
    sinks.documents({
      collection: 'flows',
      // Retention by arrival: an exporter's clock (first, last) may be anything, or absent.
      expireBy: 'receivedAt',
      of: (record, { receivedAt }) => isFlow(record) ? { ...record, receivedAt } : null,
      indexes: [{ key: { last: 1 } }, { key: { srcAddr: 1, last: 1 } }, { key: { dstAddr: 1, last: 1 } }, { key: { exporter: 1, last: 1 } }]
    }),
    sinks.updates({
      collection: 'flow_minutes',
      indexes: [{ key: { minute: 1 } }],
      expireBy: 'lastSeen', // by arrival: the minute is the exporter's clock, which may be a day behind
      expireFrom: 'minute', // written before lastSeen existed: its minute is the best guess
      of: (record, { receivedAt }) => isFlow(record) ? minuteTotals(record, receivedAt, ['srcAddr', 'dstAddr']) : null
    }),
    sinks.updates({
      collection: 'interface_minutes',
      indexes: [{ key: { minute: 1 } }],
      expireBy: 'lastSeen', // by arrival: the minute is the exporter's clock, which may be a day behind
      expireFrom: 'minute',
      of: (record, { receivedAt }) => isFlow(record) ? minuteTotals(record, receivedAt, ['inputIf', 'outputIf']) : null
    }),
    sinks.updates({
      collection: 'exporters',
      expireBy: 'lastSeen', // its last datagram's arrival: an exporter still sending is never deleted
      of: (record, { receivedAt }) => record[KIND] === 'exporter'
        ? { _id: record.id, setOnInsert: record.identity, inc: record.counts, max: { lastSeen: receivedAt } }
        : null
    }),
    sinks.updates({
      collection: 'flow_options',
      expireBy: 'lastSeen',
      // The values of the options record that reached the master last: an exporter's interface names and sampling as they are now.
      of: (record, { receivedAt }) => record[KIND] === 'options'
        ? { _id: record.id, setOnInsert: record.identity, last: { values: record.values }, max: { lastSeen: receivedAt } }
        : null
    })
  ]
})

function flowDocument (flow, exporter, datagram) {
  return {
    ...flow,
    first: flow.first === undefined ? undefined : new Date(flow.first),
    last: flow.last === undefined ? undefined : new Date(flow.last),
    exporter,
    version: datagram.version,
    domain: datagram.domain
  }
}

// An options record (RFC 3954 §6.1, RFC 7011 §3.4.2.2: interface names,
// sampling, the exporter's own figures), one document per exporter, domain,
// template and scope values; names the codec gives an enterprise element
// (`<enterprise>.<id>`) are stored with the dot as %2E, as every stored key.
function optionsRecord (options, exporter, datagram) {
  const scope = {}
  const values = {}
  for (const [name, value] of Object.entries(options.values)) {
    const key = name.replaceAll('.', '%2E')
    if (options.scope.includes(name)) scope[key] = value
    else values[key] = value
  }
  return {
    [KIND]: 'options',
    id: `${exporter}|${datagram.version}|${datagram.domain}|${options.templateId}|${Object.values(scope).join('|')}`,
    identity: { exporter, version: datagram.version, domain: datagram.domain, templateId: options.templateId, scope },
    values
  }
}

// One document per minute and pair of `fields` (addresses, or interfaces),
// in the flow's direction and, for a biflow's reverse traffic, in the
// other (the pair swapped; one document when both read the same).
function minuteTotals (flow, receivedAt, fields) {
  const at = flow.last ? flow.last.getTime() : receivedAt.getTime()
  const minute = new Date(Math.floor(at / MINUTE_MS) * MINUTE_MS)
  const [a, b] = fields.map((field) => flow[field] ?? '')
  const forward = minuteTotal(minute, flow.exporter, fields, [a, b], receivedAt)
  forward.inc = { bytes: flow.bytes, packets: flow.packets, flows: 1 }
  if (flow.reverseBytes === 0 && flow.reversePackets === 0) return forward
  const reverse = { bytes: flow.reverseBytes, packets: flow.reversePackets, flows: 1 }
  if (a === b) {
    for (const name in reverse) forward.inc[name] += reverse[name]
    return forward
  }
  const back = minuteTotal(minute, flow.exporter, fields, [b, a], receivedAt)
  back.inc = reverse
  return [forward, back]
}

function minuteTotal (minute, exporter, fields, pair, receivedAt) {
  return {
    _id: `${minute.toISOString()}|${exporter}|${pair.join('|')}`,
    setOnInsert: { minute, exporter, [fields[0]]: pair[0], [fields[1]]: pair[1] },
    max: { lastSeen: receivedAt }
  }
}

// What the datagram says of its exporter's domain: counts, and the gap in
// its sequence numbers against the next one the last datagram announced
// (kept state, so a worker's heir carries on counting). A datagram a little
// behind that is late: it leaves the expected sequence where it is, and
// what of it falls in a gap counted lost is taken back off `lost`; so is
// one exported before the last one seen, whatever its sequence (one from
// before the exporter's restart, coming after it). The exporter's restart,
// from which the sequence starts again with no loss counted: its uptime
// (v5, v9) gone back where its clock went on, a step far behind, or (IPFIX,
// which has no uptime) a step forward past 2^32 wider than the late window
// (a counter long past 2^31 started again from 0 reads as a gap of a
// billion; a wrap that lost that much is not told apart, and not counted).
function exporterSummary (kept, exporter, datagram) {
  const domain = `${datagram.version}|${datagram.domain}`
  const expected = kept.get(`next|${domain}`)
  const gap = expected === undefined ? 0 : sequenceGap(expected, datagram.sequence)
  const window = LATE_WINDOW[datagram.version]
  const clock = clockStep(kept, domain, datagram)
  const restarted = clock.restarted || gap < -window ||
    (datagram.version === 10 && gap > window && datagram.sequence < expected)
  const late = !restarted && (gap < 0 || (gap > 0 && clock.older))
  const counts = { datagrams: 1, flows: datagram.records.length, lost: 0, late: 0, restarts: 0 }
  if (restarted) {
    counts.restarts = 1
    if (kept.get(`gaps|${domain}`) !== undefined) kept.delete(`gaps|${domain}`)
  } else if (late) {
    counts.late = 1
    counts.lost = -fillGap(kept, `gaps|${domain}`, datagram)
  } else if (gap > 0) {
    counts.lost = rememberGap(kept, `gaps|${domain}`, expected, gap)
  }
  if (!late && datagram.nextSequence !== undefined) kept.set(`next|${domain}`, datagram.nextSequence)
  return {
    [KIND]: 'exporter',
    id: `${exporter}|${domain}`,
    identity: { exporter, version: datagram.version, domain: datagram.domain },
    counts
  }
}

// A datagram refused for want of a template (its templates kept) had its
// place in the sequence: the next one does not count it lost. In order, the
// expected sequence moves past it; an IPFIX one, whose records of unknown
// layout cannot be counted, leaves none expected (the next starts afresh).
function passOver (kept, datagram) {
  const name = `next|${datagram.version}|${datagram.domain}`
  const expected = kept.get(name)
  if (expected === undefined) return
  if (datagram.nextSequence === undefined) kept.delete(name)
  else if (datagram.sequence === expected) kept.set(name, datagram.nextSequence)
}

// The domain's export clock against the newest datagram seen before
// (kept as [exportTime, sysUptime]): `older`, exported before it (by more
// than v9's and IPFIX's whole seconds); `restarted`, a v5 or v9 exporter
// whose uptime went back while its clock went on, by more than the slack
// (its uptime then plus the time between the exports is not its uptime
// now, mod 2^32, which holds across the uptime's wrap every 49.7 days). A
// clock that did not move (unset: 0, or frozen) or went back tells nothing;
// one stepped forward leaves the uptime ahead, not behind. Remembers this
// datagram's, but an older one's.
function clockStep (kept, domain, datagram) {
  const name = `clock|${domain}`
  const last = kept.get(name)
  const seen = Array.isArray(last) && last.length === 2
  const elapsed = seen ? datagram.exportTime - last[0] : 0
  if (!seen || elapsed >= 0) kept.set(name, [datagram.exportTime, datagram.sysUptime ?? null])
  if (!seen) return { older: false, restarted: false }
  const older = elapsed < -1000
  if (elapsed <= 0 || datagram.sysUptime === undefined || typeof last[1] !== 'number') return { older, restarted: false }
  const drift = (datagram.sysUptime - last[1] - elapsed) | 0
  return { older, restarted: Math.abs(drift) > UPTIME_SLACK_MS && datagram.sysUptime < last[1] }
}

// Gaps are [start, size] in sequence units (start mod 2^32), the latest last.
function rememberGap (kept, name, start, size) {
  const gaps = kept.get(name) || []
  kept.set(name, [...gaps.slice(-(MAX_GAPS - 1)), [start, size]])
  return size
}

// How much of a late datagram's sequence range lies in a remembered gap
// (that much was counted lost and came after all); the gap shrinks by it.
// 0 for one sent twice or later than the gaps remembered.
function fillGap (kept, name, datagram) {
  const gaps = kept.get(name)
  if (!Array.isArray(gaps) || datagram.nextSequence === undefined) return 0
  const size = (datagram.nextSequence - datagram.sequence) >>> 0
  for (let i = 0; i < gaps.length; i++) {
    const [start, length] = gaps[i]
    const offset = (datagram.sequence - start) >>> 0
    if (offset >= length) continue
    const filled = Math.min(size, length - offset)
    const rest = [[start, offset], [(datagram.sequence + filled) >>> 0, length - offset - filled]].filter(([, n]) => n > 0)
    const next = [...gaps.slice(0, i), ...rest, ...gaps.slice(i + 1)]
    if (next.length > 0) kept.set(name, next)
    else kept.delete(name)
    return filled
  }
  return 0
}
