'use strict'

// A real RTP call between two GStreamer rtpbin endpoints (test/fixtures/
// gst-call.py, run with Debian's /usr/bin/python3 and its GObject bindings),
// with netsim loss and delay, whose RTCP also reaches the collector port.
// Resolves with the fixture's ground truth: GStreamer's own rtpsession
// statistics, never computed by our code. See the fixture's docstring for
// the pipelines and the shape of the result; the essentials:
//
//   truth.ssrc.A / truth.ssrc.B
//   truth.senders.A = { ssrc, 'packets-sent', 'octets-sent' }   (B too if bidirectional)
//   truth.receivers = [{ receiver: 'B', receiverSsrc, sender: 'A', senderSsrc,
//       'packets-received', 'packets-lost', jitter (RTP clock units), 'clock-rate',
//       'sent-rb-*' (the last report block this receiver SENT about the sender,
//       i.e. what the collector saw last), sentBySender, trueLost, wire, ... }, ...]
//   truth.rtt = [{ measuredBy: 'A', reportFrom: 'B', 'rb-round-trip' (1/65536 s),
//       roundTripMs, 'rb-*' (the block B sent about A, as A received it) }, ...]
//   truth.bye.A = { sent, peerSawBye }, truth.rtcpSent.A = { datagrams, log }
//
// Compare what the collector stored with the 'sent-rb-*' fields (exact: the
// fixture waits for one report after the media stops, and the BYE compound's
// SR/RR has no report block), and with trueLost / the drop rate loosely:
// with GStreamer's default probation (2) its cumulative lost is one less than
// the real loss (-1 when none) and misses losses in the first packets;
// probation: 0 makes it equal tshark's count. Jitter is in RTP units (1/8000 s).
// 64-bit values (sr-ntptime) come as decimal strings, with sr-ntp-msw/-lsw.
// A call takes durationMs + ~1.2 s (+ ~1.5 s with pcap).

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { requireBinary, requireGstElements, run } = require('./rtp-peers')
const { startTestCollector } = require('./collector')
const { waitFor } = require('./wait-for')
const { removeDir } = require('./temp-dir')

const PYTHON = '/usr/bin/python3'
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'gst-call.py')
const GI_PACKAGES = 'python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0'

let prerequisites = null

/** Throw (naming the Debian package) unless the fixture can run. Memoized. */
function requireGstCall () {
  if (!prerequisites) {
    prerequisites = checkPrerequisites()
    prerequisites.catch(() => { prerequisites = null })
  }
  return prerequisites
}

async function checkPrerequisites () {
  try {
    fs.accessSync(PYTHON, fs.constants.X_OK)
  } catch {
    throw new Error(`${PYTHON} not found: install the Debian packages "python3 ${GI_PACKAGES}" (apt-get install -y python3 ${GI_PACKAGES})`)
  }
  const gi = await run(PYTHON, ['-c', [
    'import gi',
    "gi.require_version('Gst', '1.0')",
    "gi.require_version('GstRtp', '1.0')",
    'from gi.repository import Gst, GstRtp, GLib, Gio'
  ].join('; ')])
  if (gi.code !== 0) {
    throw new Error(`GStreamer GObject bindings missing for ${PYTHON} (${gi.stderr.trim().split('\n').pop()}): install the Debian packages "${GI_PACKAGES}" (apt-get install -y ${GI_PACKAGES})`)
  }
  await requireGstElements(['rtpbin', 'udpsrc', 'udpsink', 'rtppcmapay', 'alawenc'], 'gstreamer1.0-plugins-good')
  await requireGstElements(['audiotestsrc'], 'gstreamer1.0-plugins-base')
  await requireGstElements(['netsim'], 'gstreamer1.0-plugins-bad')
}

/**
 * Run one call to completion and return the fixture's JSON truth.
 *
 * @param {object} options
 * @param {number} options.collectorPort every RTCP datagram A or B sends is also sent to 127.0.0.1:collectorPort
 * @param {number} [options.drop=0] netsim drop probability of media, each direction
 * @param {number} [options.dropAtoB] override drop for A->B media
 * @param {number} [options.dropBtoA] override drop for B->A media
 * @param {number} [options.delayMs=0] constant one-way delay on media and peer-bound RTCP (RTT ≈ 2·delayMs)
 * @param {number} [options.delayAtoBMs] override delayMs for A->B media and A's peer-bound RTCP (an asymmetric path)
 * @param {number} [options.delayBtoAMs] override delayMs for B->A
 * @param {number} [options.delayJitterMs=0] media delay uniform in [delayMs, delayMs + delayJitterMs]
 * @param {number} [options.durationMs=6000] media duration
 * @param {boolean} [options.bidirectional=true] false: A sends, B only receives (RR)
 * @param {number} [options.rtcpIntervalMs=500] rtpsession rtcp-min-interval
 * @param {number} [options.probation] rtpsession probation (GStreamer default 2)
 * @param {number} [options.ssrcA] [options.ssrcB] fixed SSRCs (default random)
 * @param {number} [options.seqnumOffset] first RTP sequence number of both senders (default random)
 * @param {{ atMs: number, durationMs: number, drop: number }} [options.burst] A->B media dropped with `drop` for a while
 * @param {{ atMs: number, durationMs: number }} [options.hold] both senders stop producing media (no sequence number spent) while RTCP goes on
 * @param {{ aPort: number, bPort: number, aSendsTo: number, bSendsTo: number }} [options.relay] a media relay between
 *   A and B: A and B bind these RTP ports (RTCP on the next) and send to the relay's ports instead of each other's
 * @param {string} [options.pcap] capture the call on lo with tshark into this file (needs root)
 * @param {'pcma'|'opus'|'g722'} [options.codec='pcma'] PCMA (8 kHz RTP clock), Opus (48 kHz) or G.722 (16 kHz
 *   audio, RTP clock 8000 per RFC 3551 §4.5.2, payload type 9), 20 ms packets
 * @param {AbortSignal} [options.signal] abort: kill the fixture and reject
 * @param {import('node:test').TestContext} [options.t] kill the fixture in t.after if still running
 * @param {(child: import('node:child_process').ChildProcess) => void} [options.onSpawn]
 * @returns {Promise<object>} the truth (see the top of this file)
 */
async function runGstCall ({
  collectorPort, drop = 0, dropAtoB, dropBtoA, delayMs = 0, delayAtoBMs, delayBtoAMs, delayJitterMs = 0, durationMs = 6000,
  bidirectional = true, rtcpIntervalMs = 500, probation, ssrcA, ssrcB, seqnumOffset, burst, hold, relay, pcap, codec, signal, t, onSpawn
} = {}) {
  if (!Number.isInteger(collectorPort) || collectorPort <= 0 || collectorPort > 65535) {
    throw new TypeError(`runGstCall: collectorPort must be a UDP port, got ${collectorPort}`)
  }
  signal?.throwIfAborted()
  await requireGstCall()
  if (pcap) requireBinary('tshark', 'tshark')
  signal?.throwIfAborted()

  const args = [FIXTURE,
    '--collector-port', String(collectorPort),
    bidirectional ? '--bidirectional' : '--one-way',
    '--drop', String(drop),
    '--delay-ms', String(delayMs),
    '--delay-jitter-ms', String(delayJitterMs),
    '--duration-s', String(durationMs / 1000),
    '--rtcp-interval-ms', String(rtcpIntervalMs)]
  if (dropAtoB !== undefined) args.push('--drop-a-to-b', String(dropAtoB))
  if (dropBtoA !== undefined) args.push('--drop-b-to-a', String(dropBtoA))
  if (delayAtoBMs !== undefined) args.push('--delay-a-to-b-ms', String(delayAtoBMs))
  if (delayBtoAMs !== undefined) args.push('--delay-b-to-a-ms', String(delayBtoAMs))
  if (probation !== undefined) args.push('--probation', String(probation))
  if (ssrcA !== undefined) args.push('--ssrc-a', String(ssrcA >>> 0))
  if (ssrcB !== undefined) args.push('--ssrc-b', String(ssrcB >>> 0))
  if (seqnumOffset !== undefined) args.push('--seqnum-offset', String(seqnumOffset))
  if (burst) args.push('--burst-at-s', String(burst.atMs / 1000), '--burst-s', String(burst.durationMs / 1000), '--burst-drop', String(burst.drop))
  if (hold) args.push('--hold-at-s', String(hold.atMs / 1000), '--hold-s', String(hold.durationMs / 1000))
  if (relay) args.push('--a-rtp-port', String(relay.aPort), '--b-rtp-port', String(relay.bPort), '--a-sends-to', String(relay.aSendsTo), '--b-sends-to', String(relay.bSendsTo))
  if (pcap) args.push('--pcap', pcap)
  if (codec !== undefined) args.push('--codec', codec)

  // The fixture has its own hard limit (duration + delays + 3 intervals + 10 s);
  // this one only catches a wedged interpreter.
  const limitMs = durationMs + 3 * (Math.max(delayMs, delayAtoBMs || 0, delayBtoAMs || 0) + delayJitterMs) + 3 * rtcpIntervalMs + 25000 + (pcap ? 15000 : 0)
  const child = spawn(PYTHON, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  const kill = () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') }
  t?.after(kill)
  onSpawn?.(child)

  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr = (stderr + chunk).slice(-8192) })

  return new Promise((resolve, reject) => {
    let settled = false
    const timer = setTimeout(() => {
      finish(new Error(`gst-call fixture still running after ${limitMs} ms, killed; stderr:\n${stderr}`))
      kill()
    }, limitMs)
    const onAbort = () => {
      // SIGTERM lets the fixture stop its tshark child; SIGKILL if it lingers
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      setTimeout(kill, 2000).unref()
      finish(signal.reason instanceof Error ? signal.reason : Object.assign(new Error('gst-call aborted'), { name: 'AbortError' }))
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    child.once('error', (err) => finish(new Error(`cannot run ${PYTHON} ${FIXTURE}: ${err.message}`)))
    child.once('close', (code, sig) => {
      const line = stdout.trim().split('\n').pop() || ''
      let truth = null
      try { truth = JSON.parse(line) } catch {}
      if (truth && truth.ok && code === 0) return finish(null, truth)
      const why = truth?.error || truth?.errors?.join('; ') || `exit ${code ?? sig}, no JSON on stdout`
      finish(new Error(`gst-call fixture failed: ${why}\nstderr:\n${stderr}`))
    })

    function finish (err, value) {
      if (settled) return
      settled = true
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      err ? reject(err) : resolve(value)
    }
  })
}

const STREAM_ROW = new RegExp('^\\s*' + [
  '([\\d.]+)', '([\\d.]+)', // start, end (s)
  '(\\S+)', '(\\d+)', '(\\S+)', '(\\d+)', // src ip, port, dst ip, port
  '(0x[0-9A-Fa-f]+)', '(.+?)', // ssrc, payload
  '(\\d+)', '(-?\\d+)\\s+\\((-?[\\d.]+)%\\)', // packets, lost (pct)
  '(-?[\\d.]+)', '(-?[\\d.]+)', '(-?[\\d.]+)', // min/mean/max delta (ms)
  '(-?[\\d.]+)', '(-?[\\d.]+)', '(-?[\\d.]+)' // min/mean/max jitter (ms)
].join('\\s+') + '(?:\\s+(X))?\\s*$')

/**
 * tshark's own RTP stream analysis of a capture (the second oracle): one row
 * per stream of `tshark -z rtp,streams`. tshark's lost = (highest - first
 * captured sequence number + 1) - packets, so loss before a stream's first
 * captured packet or after its last is invisible to it; its jitter is RFC
 * 3550's, from capture timestamps, in ms.
 *
 * @param {string} pcapFile
 * @param {{ rtpPorts?: number[] }} [options] decode these UDP ports as RTP instead of the heuristic
 * @returns {Promise<Array<{ ssrc: number, srcPort: number, dstPort: number, payload: string,
 *   packets: number, lost: number, lostPercent: number, maxDeltaMs: number, meanDeltaMs: number,
 *   minJitterMs: number, meanJitterMs: number, maxJitterMs: number, problems: boolean,
 *   startS: number, endS: number, srcIp: string, dstIp: string }>>}
 */
async function tsharkRtpStreams (pcapFile, { rtpPorts } = {}) {
  requireBinary('tshark', 'tshark')
  const decode = rtpPorts?.length
    ? rtpPorts.flatMap((port) => ['-d', `udp.port==${port},rtp`])
    : ['-o', 'rtp.heuristic_rtp:TRUE']
  const { code, stdout, stderr } = await run('tshark', ['-n', '-r', pcapFile, ...decode, '-q', '-z', 'rtp,streams'])
  if (code !== 0) throw new Error(`tshark -z rtp,streams on ${pcapFile} failed (${code}): ${stderr}`)
  const rows = []
  for (const line of stdout.split('\n')) {
    const m = STREAM_ROW.exec(line)
    if (!m) continue
    rows.push({
      startS: +m[1],
      endS: +m[2],
      srcIp: m[3],
      srcPort: +m[4],
      dstIp: m[5],
      dstPort: +m[6],
      ssrc: parseInt(m[7], 16),
      payload: m[8],
      packets: +m[9],
      lost: +m[10],
      lostPercent: +m[11],
      minDeltaMs: +m[12],
      meanDeltaMs: +m[13],
      maxDeltaMs: +m[14],
      minJitterMs: +m[15],
      meanJitterMs: +m[16],
      maxJitterMs: +m[17],
      problems: m[18] === 'X'
    })
  }
  return rows
}

/**
 * The RTP sequence numbers in a capture, per SSRC, in capture order, as
 * tshark dissects them: what each receiver was delivered, packet by packet.
 * @param {string} pcapFile
 * @returns {Promise<Map<number, number[]>>}
 */
async function tsharkRtpSequences (pcapFile) {
  requireBinary('tshark', 'tshark')
  const { code, stdout, stderr } = await run('tshark', ['-n', '-r', pcapFile, '-o', 'rtp.heuristic_rtp:TRUE', '-Y', 'rtp', '-T', 'fields', '-e', 'rtp.ssrc', '-e', 'rtp.seq'])
  if (code !== 0) throw new Error(`tshark -T fields on ${pcapFile} failed (${code}): ${stderr}`)
  const bySsrc = new Map()
  for (const line of stdout.split('\n')) {
    const [ssrc, seq] = line.trim().split('\t')
    if (!ssrc || seq === undefined) continue
    const key = parseInt(ssrc, 16)
    if (!bySsrc.has(key)) bySsrc.set(key, [])
    bySsrc.get(key).push(Number(seq))
  }
  return bySsrc
}

/**
 * Every report block sent to the collector's port, as tshark dissects it,
 * per `reporter>reported` SSRC, in capture order: `{ seq, lost, jitter }`
 * (extended highest sequence number, cumulative lost, jitter in timestamp units).
 * @returns {Promise<Map<string, Array<{ seq: number, lost: number, jitter: number }>>>}
 */
async function tsharkReportBlocks (pcapFile, collectorPort) {
  requireBinary('tshark', 'tshark')
  const { code, stdout, stderr } = await run('tshark', ['-n', '-r', pcapFile, '-d', `udp.port==${collectorPort},rtcp`, '-Y', `udp.dstport==${collectorPort} && rtcp`,
    '-T', 'fields', '-e', 'rtcp.senderssrc', '-e', 'rtcp.ssrc.identifier', '-e', 'rtcp.ssrc.ext_high', '-e', 'rtcp.ssrc.cum_nr', '-e', 'rtcp.ssrc.jitter'])
  if (code !== 0) throw new Error(`tshark on ${pcapFile} failed (${code}): ${stderr}`)
  const first = (field) => Number(field.split(',')[0])
  const blocks = new Map()
  for (const line of stdout.split('\n')) {
    const [reporter, identifiers, seq, lost, jitter] = line.trim().split('\t')
    if (!seq) continue // a compound without a report block (the BYE's)
    const key = `${parseInt(reporter.split(',')[0], 16)}>${parseInt(identifiers.split(',')[0], 16)}`
    if (!blocks.has(key)) blocks.set(key, [])
    blocks.get(key).push({ seq: first(seq), lost: first(lost), jitter: first(jitter) })
  }
  return blocks
}

/**
 * Packets the wire lost in the extended range (first, last]: last − first
 * less those the capture delivered (`sequences`, 16-bit, in capture order).
 * `firstCycle`: where the extended numbering starts (GStreamer's is 65536 up).
 */
function wireLost (sequences, first, last, firstCycle = 0) {
  let cycles = firstCycle
  let previous = null
  let delivered = 0
  for (const seq of sequences) {
    if (previous !== null && seq < previous && previous - seq > 32768) cycles += 65536
    previous = seq
    const ext = cycles + seq
    if (ext > first && ext <= last) delivered++
  }
  return (last - first) - delivered
}

/**
 * Real calls into a collector started for the test (`collectorModule`):
 * each of `calls` is runGstCall's options less the port, with a `name`
 * (its capture: pcapOf(call)); resolves once every RTCP datagram they sent
 * was processed, with the collector and what GStreamer said of each call.
 */
async function callsIntoCollector (t, collectorModule, calls) {
  const { collector, db, port } = await startTestCollector(t, collectorModule)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gst-calls-'))
  t.after(() => removeDir(dir))
  const pcapOf = (call) => path.join(dir, `${call.name}.pcap`)
  const truths = await Promise.all(calls.map(({ name, ...options }) => runGstCall({ ...options, collectorPort: port, pcap: pcapOf({ name }), t })))
  const sent = truths.reduce((sum, truth) => sum + truth.rtcpSent.A.datagrams + truth.rtcpSent.B.datagrams, 0)
  await waitFor(() => collector.summary().processed === sent, { what: `${sent} RTCP datagrams processed` })
  return { collector, db, port, truths, pcapOf }
}

module.exports = { runGstCall, requireGstCall, callsIntoCollector, tsharkRtpStreams, tsharkRtpSequences, tsharkReportBlocks, wireLost, FIXTURE, PYTHON }
