'use strict'

// Round-trip times are computed from when each report arrived (RTT = A −
// LSR − DLSR, docs/call-quality.md), so an arrival time must be the
// datagram's own, taken by the kernel, not the time the master got round
// to it. The real RTCP collector (its master in a process of its own, 2
// workers writing into the test server) receives two-way calls in real
// time (test/helpers/rtcp-calls.js) while its master is stopped for 80 ms
// every 700 ms (SIGSTOP/SIGCONT): datagrams wait in the socket buffer
// meanwhile, as behind a busy event loop. The oracle is tcpdump's capture
// of the same datagrams on loopback, read by tshark: each report's term is
// its frame's time less the time of the SR frame its LSR names, less
// DLSR; a round trip is that plus the other direction's latest term, as
// the collector pairs them. Every stored RTT must lie within the oracle's
// range for its call, give or take what whole-ms arrival times allow.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn, execFileSync } = require('node:child_process')
const { once } = require('node:events')
const { waitFor } = require('../helpers/wait-for')
const { startRtcpMaster } = require('../helpers/rtcp-master')
const { sendCalls } = require('../helpers/rtcp-calls')
const { requireBinary } = require('../helpers/rtp-peers')
const { freePortPair } = require('../helpers/ports')
const { removeDir } = require('../helpers/temp-dir')
const { sideQuality } = require('../../collectors/rtcp/quality-analytics')

const HOST = '127.0.0.1'
const NTP_UNIT = 65536
// Arrival times are whole ms (a Date): each of a round trip's two terms is
// off by less than 1 ms, DLSR by 1/65536 s, the capture's time from the
// kernel's receive time by microseconds.
const TOLERANCE_MS = 2 * (1 + 1000 / NTP_UNIT) + 0.05
const STALL_MS = 80
const STALL_EVERY_MS = 700

/** The collector in its own process, driven over IPC (test/fixtures/rtcp-master.js). */
function startMaster (t, argv) {
  return startRtcpMaster(t, argv, 'arrival')
}

/**
 * tcpdump writing what goes to `port` on loopback into `file`, once it is
 * seen capturing; the function returned stops it once it has written
 * everything sent before (each seen by a probe to `probePort` in the file).
 */
async function startCapture (t, file, port, probePort) {
  const child = spawn('tcpdump', ['-U', '--immediate-mode', '-n', '-i', 'lo', '-w', file, `udp and (dst port ${port} or dst port ${probePort})`], { stdio: ['ignore', 'ignore', 'pipe'] })
  let output = ''
  child.stderr.setEncoding('utf8').on('data', (chunk) => { output = (output + chunk).slice(-4000) })
  t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const probe = dgram.createSocket('udp4')
  const written = async (text) => {
    await waitFor(() => {
      probe.send(text, probePort, HOST)
      return fs.existsSync(file) && fs.readFileSync(file).includes(text)
    }, { timeout: 10000, interval: 50, what: `tcpdump writing the capture (${output})` })
  }
  await written('capturing')
  return async () => {
    await written('all written')
    probe.close()
    child.kill('SIGINT')
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit')
  }
}

/** Stops and continues `child` (STALL_MS every STALL_EVERY_MS) until the returned function is called. */
function stallRepeatedly (child) {
  let stalled = 0
  let stopped = false
  let timer = null
  const cycle = () => {
    child.kill('SIGSTOP')
    stalled++
    timer = setTimeout(() => {
      child.kill('SIGCONT')
      if (!stopped) timer = setTimeout(cycle, STALL_EVERY_MS - STALL_MS)
    }, STALL_MS)
  }
  timer = setTimeout(cycle, STALL_EVERY_MS / 2)
  return () => {
    stopped = true
    clearTimeout(timer)
    child.kill('SIGCONT')
    return stalled
  }
}

const mid = (msw, lsw) => (((msw & 0xffff) << 16) | (lsw >>> 16)) >>> 0

/**
 * The round trips the capture shows, by call (its lower SSRC): every
 * report whose LSR names an SR captured earlier gives its direction's term;
 * with a term of the other direction before it, a round trip (`rtts`),
 * else one direction doubled (`estimated`).
 */
function oracleRoundTrips (file, port) {
  const fields = ['frame.time_epoch', 'rtcp.senderssrc', 'rtcp.timestamp.ntp.msw', 'rtcp.timestamp.ntp.lsw', 'rtcp.ssrc.identifier', 'rtcp.ssrc.lsr', 'rtcp.ssrc.dlsr']
  const text = execFileSync('tshark', ['-r', file, '-d', `udp.port==${port},rtcp`, '-Y', `udp.dstport==${port} && rtcp.timestamp.ntp.msw`, '-T', 'fields', '-E', 'separator=|', ...fields.flatMap((f) => ['-e', f])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  const srAt = new Map() // `${ssrc}:${mid}` → capture time, ms
  const terms = new Map() // `${reporter}:${source}` → the latest term
  const calls = new Map()
  for (const line of text.split('\n').filter(Boolean)) {
    // The SR's one report block (rtcp.ssrc.identifier also names the SDES chunk's SSRC, after it).
    const [time, reporter, msw, lsw, identifiers, lsr, dlsr] = line.split('|')
    const source = identifiers.split(',')[0]
    const at = Number(time) * 1000
    srAt.set(`${Number(reporter)}:${mid(Number(msw), Number(lsw))}`, at)
    if (!source || Number(lsr) === 0) continue
    const sentAt = srAt.get(`${Number(source)}:${Number(lsr)}`)
    assert.ok(sentAt !== undefined, `the SR that LSR ${lsr} of ${reporter} names was captured`)
    const term = at - sentAt - Number(dlsr) / NTP_UNIT * 1000
    terms.set(`${reporter}:${source}`, term)
    const peer = terms.get(`${source}:${reporter}`)
    const key = Math.min(Number(reporter), Number(source))
    if (!calls.has(key)) calls.set(key, { rtts: [], estimated: [] })
    if (peer === undefined) calls.get(key).estimated.push(2 * term)
    else calls.get(key).rtts.push(term + peer)
  }
  return calls
}

/** The stored sides' quality of the call with SSRCs `a` and `b`. */
function storedSides (docs, a, b) {
  const sides = []
  for (const doc of docs) {
    if (![String(a), String(b)].includes(doc.from.ID)) continue
    for (const side of [doc.from, doc.to]) {
      const q = sideQuality(side)
      if (q) sides.push(q)
    }
  }
  return sides
}

/** What `sides` hold for `figure`: { min, max, count }. */
function storedFigure (sides, figure) {
  const spreads = sides.map((q) => q[figure]).filter(Boolean)
  return {
    min: Math.min(...spreads.map((s) => s.min)),
    max: Math.max(...spreads.map((s) => s.max)),
    count: spreads.reduce((n, s) => n + s.count, 0)
  }
}

/** The round trips `sides` refused as below zero. */
const storedNegative = (sides) => sides.reduce((n, q) => n + (q.invalid['rtt-negative'] || 0), 0)

test('round-trip times are the wire\'s while the master stalls: each datagram arrives at the kernel\'s time, not its batch\'s', { timeout: 120000 }, async (t) => {
  for (const [binary, pkg] of [['tcpdump', 'tcpdump'], ['tshark', 'tshark']]) requireBinary(binary, pkg)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtcp-arrival-'))
  t.after(() => removeDir(dir))
  const master = await startMaster(t, [])
  const capture = path.join(dir, 'rtcp.pcap')
  const probePort = await freePortPair()
  const stopCapture = await startCapture(t, capture, master.port, probePort)

  // Calls 40 ms each way (a WAN), and one with no delay at all (a LAN: its
  // round trip is below a millisecond and must never come out negative).
  const calls = []
  for (let i = 0; i < 6; i++) {
    const media = { lostPerRound: 0, delayMs: i === 5 ? 0 : 40 }
    calls.push({ a: 0x5000 + 2 * i, b: 0x5001 + 2 * i, ab: media, ba: media })
  }
  const endStalls = stallRepeatedly(master.child)
  let sent, stalls
  try {
    ({ sent } = await sendCalls(master.port, calls, { rounds: 40, gapMs: 100 }))
  } finally {
    stalls = endStalls()
  }
  await waitFor(async () => (await master.ask('summary')).processed === sent, { timeout: 30000, what: 'every datagram processed' })
  await stopCapture()
  const oracle = oracleRoundTrips(capture, master.port)
  t.diagnostic(`${stalls} stalls of ${STALL_MS} ms; ${sent} datagrams`)

  const db = master.db
  for (const { a, b, ab } of calls) {
    const truth = oracle.get(a)
    assert.ok(truth && truth.rtts.length > 40, `the capture shows the round trips of call ${a}`)
    // Each round trip the wire shows is stored, measured or estimated, or
    // refused as below zero (the LAN call's, see below): once they add up,
    // the call is stored whole.
    let stored, refused
    const wireTotal = truth.rtts.length + truth.estimated.length
    await waitFor(async () => {
      const sides = storedSides(await db.collection('streams').find({}).toArray(), a, b)
      stored = storedFigure(sides, 'rttMs')
      refused = storedNegative(sides)
      return stored.count + storedFigure(sides, 'rttEstimatedMs').count + refused === wireTotal
    }, { timeout: 10000, what: `the ${wireTotal} round trips of call ${a} stored or refused` })
    const belowZero = truth.rtts.filter((v) => v < 0).length
    assert.ok(stored.count <= truth.rtts.length && stored.count >= truth.rtts.length - belowZero,
      `call ${a}: ${stored.count} round trips measured both ways stored, of the wire's ${truth.rtts.length} (${belowZero} below zero)`)
    const lowest = Math.min(...truth.rtts)
    const highest = Math.max(...truth.rtts)
    t.diagnostic(`call ${a} (${ab.delayMs} ms each way): wire RTT ${lowest.toFixed(3)}–${highest.toFixed(3)} ms, stored ${stored.min}–${stored.max} ms; ${refused} refused as below zero`)
    assert.ok(stored.min >= Math.max(0, lowest - TOLERANCE_MS) && stored.max <= highest + TOLERANCE_MS,
      `call ${a}: every stored RTT (${stored.min}–${stored.max} ms) within ${TOLERANCE_MS.toFixed(2)} ms of the wire's (${lowest.toFixed(3)}–${highest.toFixed(3)} ms)`)
  }
  // The test's ends compute DLSR from their own whole-ms clock, and a busy
  // machine can delay a send after its time was taken: the wire itself then
  // shows a LAN round trip (or its one-direction estimate) below zero. The
  // collector's whole-ms arrival times move a round trip by under 2 ms and
  // it refuses only those below -2.03 ms: a refusal needs one below zero
  // on the wire. (Batch times instead of the kernel's put the 40 ms calls
  // outside the wire's range above, by up to a stall.)
  const wireNegative = [...oracle.values()].flatMap((c) => [...c.rtts, ...c.estimated]).filter((v) => v < 0).length
  const stats = await master.ask('stats')
  const invalid = stats.workers.reduce((n, w) => n + ((w.custom.quality && w.custom.quality.invalid && w.custom.quality.invalid['rtt-negative']) || 0), 0)
  t.diagnostic(`round trips refused as negative: ${invalid}; below zero on the wire: ${wireNegative}`)
  assert.ok(invalid <= wireNegative, `no round trip came out negative that the wire shows at or above zero (${invalid} refused, ${wireNegative} negative on the wire)`)
})
