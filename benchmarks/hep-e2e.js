'use strict'
// The same RTCP reports stored through HEP and straight, in one invocation:
// the HEP collector fed the RTCP simulator's reports as rtpengine sends them
// (HEP3, protocol type 5, the report as rtpengine's JSON, the call's id in
// the correlation chunk; encoded by hep-js) against the RTCP collector fed
// the bare datagrams. Both with 2 workers on one embedded
// MongoDB-compatible server (in memory), a sender in another process at
// --rate reports/s for --reports reports over --calls calls, variants
// alternating for --rounds rounds.
//   storedPerSec  reports / (last acknowledgement − first send)
//   callsPerSec   storedPerSec / 2 reports per call per round of reports
//   masterUsPerReport  the master's CPU (this process) / reports
//   workersUsPerReport, databaseUsPerReport  the workers' CPU (both), the
//     embedded server's, / reports (from /proc: where a budget's writes go)
// Prints a table per round (after a warm-up round of each variant, not
// counted), the medians and HEP/RTCP ratios (target: HEP stores ≥ 0.9 of
// RTCP's rate), then one JSON line.
// Usage: node benchmarks/hep-e2e.js [--reports 60000] [--rate 10000]
//   [--calls 500] [--rounds 3] [--memory-budget SIZE]
// --memory-budget is both collectors' (default theirs, 8m): what the workers
// hold of what they took (a stream's update, however many reports it
// coalesces), plus the bytes of batches not taken yet: before it counted the
// bytes sent, a HEP report (~550 bytes) had fewer of them in flight than a
// bare one (~85), and each database write coalesced fewer (docs/hep.md).
const os = require('node:os')
const path = require('node:path')
const fs = require('node:fs')
const { fork } = require('node:child_process')
const cluster = require('node:cluster')
const { sendPaced } = require('./paced-sender')
const minimist = require('minimist')
const rtcp = require('../collectors/rtcp')
const hep = require('../collectors/hep')
const RtcpSimulator = require('../collectors/rtcp/simulator')
const { startJavaServer } = require('../lib/mongo/java-server')
const { accountedFor } = require('../lib/master/counters')
const { procStat } = require('./proc-tree')

const args = minimist(process.argv.slice(2), { string: ['memory-budget'], default: { reports: 60000, rate: 10000, calls: 500, rounds: 3 } })
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

if (process.argv[2] === '--sender') sender()
else main().catch((err) => { console.error(err); process.exit(1) })

// ---- the sender (a child process): generates the reports, then sends them paced ----

function sender () {
  process.once('message', async ({ variant, port, reports, rate, calls }) => {
    const HEPjs = require('hep-js')
    const { decodeRtcp } = require('../collectors/rtcp/decoder')
    const simulator = new RtcpSimulator({ streams: calls })
    const datagrams = []
    for (let i = 0; i < reports; i++) {
      const call = simulator.cursor >> 1
      const raw = simulator.next()
      datagrams.push(variant === 'rtcp'
        ? raw
        : HEPjs.encapsulate(rtpengineJson(decodeRtcp(raw).packets), { protocolFamily: 2, protocol: 17, srcIp: '10.0.0.1', dstIp: '10.0.0.2', srcPort: 30001, dstPort: 40001, timeSeconds: Math.floor(Date.now() / 1000), timeUseconds: 0, payloadType: 5, captureId: 1, hepNodeName: 'bench', correlation_id: `call-${call}@bench` }))
    }
    // A capture agent stamps each packet when it captured it (rtpengine: when
    // it sent the report, to the µs), as the RTCP collector takes each
    // datagram's arrival: whole seconds would make a second's reports one
    // instant to the call-quality model, and the two variants' work unlike.
    sendPaced(datagrams, port, rate, variant === 'rtcp' ? null : stampCaptureTime)
  })
}

const HEP_HEADER = 6 // "HEP3" and the packet's length
const TIME_SECONDS = 0x0009 // generic chunks (vendor 0): capture time, seconds and microseconds
const TIME_MICROSECONDS = 0x000a

// Writes `ms` into a HEP3 packet's time chunks, in place.
function stampCaptureTime (packet, ms) {
  for (let offset = HEP_HEADER; offset + 6 <= packet.length;) {
    const type = packet.readUInt16BE(offset + 2)
    const length = packet.readUInt16BE(offset + 4)
    if (packet.readUInt16BE(offset) === 0 && type === TIME_SECONDS) packet.writeUInt32BE(Math.floor(ms / 1000), offset + 6)
    if (packet.readUInt16BE(offset) === 0 && type === TIME_MICROSECONDS) packet.writeUInt32BE((ms % 1000) * 1000, offset + 6)
    offset += length
  }
}

// An RTCP compound as rtpengine writes it into HEP type 5 (daemon/rtcp.c's homer handlers).
function rtpengineJson (packets) {
  const parts = []
  for (const p of packets) {
    if (p.type === 'SR') parts.push(`"sender_information":{"ntp_timestamp_sec":${p.ntpSec},"ntp_timestamp_usec":${p.ntpFrac},"octets":${p.octetCount},"rtp_timestamp":${p.rtpTimestamp}, "packets":${p.packetCount}}`)
    if (p.type === 'SR' || p.type === 'RR') {
      const blocks = p.reports.map((b) => `{"source_ssrc":${b.ssrc},"highest_seq_no":${b.highestSeq},"fraction_lost":${b.fractionLost},"ia_jitter":${b.jitter},"packets_lost":${b.cumulativeLost & 0xffffff},"lsr":${b.lsr},"dlsr":${b.dlsr}}`)
      parts.push(`"ssrc":${p.ssrc},"type":${p.type === 'SR' ? 200 : 201},"report_count":${p.reports.length},"report_blocks":[${blocks.join(',')}]`)
    }
    if (p.type === 'SDES') parts.push(`"sdes_report_count":${p.chunks.length},"sdes_information": [ ${p.chunks.map((c) => `{"sdes_chunk_ssrc":${c.ssrc},"type":1,"text":"${c.items.cname}"}`).join(',')}]`)
  }
  return `{ ${parts.join(',')} }`
}

// ---- the master: one run per variant and round ----

async function runOnce (variant, { uri, pid: databasePid }, round) {
  const module = variant === 'rtcp' ? rtcp : hep
  const bufferDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hep-bench-'))
  const config = new module.Config(['--port', '0', '-i', '2', '--database', `bench_${variant}_${round}_${Date.now()}`, '--buffer-dir', bufferDir, ...(args['memory-budget'] ? ['--memory-budget', args['memory-budget']] : [])]).getConfig()
  const collector = new module.Collector({ ...config, workerOptions: { mongoUri: uri } })
  await collector.start()
  const child = fork(__filename, ['--sender'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const messages = []
  child.on('message', (m) => messages.push(m))
  child.send({ variant, port: collector.address().port, reports: args.reports, rate: args.rate, calls: args.calls })
  while (!messages.some((m) => m.ready)) await sleep(20)
  const cpuBefore = process.cpuUsage()
  const workerPids = Object.values(cluster.workers).map((w) => w.process.pid)
  const cpuOf = (pids) => pids.reduce((sum, pid) => sum + (procStat(pid)?.cpu || 0), 0)
  const workersBefore = cpuOf(workerPids)
  const databaseBefore = cpuOf([databasePid])
  while (!messages.some((m) => m.done)) await sleep(50)
  const deadline = Date.now() + 120000
  let s = collector.summary()
  while (Date.now() < deadline && !(s.received + s.dropped.kernel >= args.reports && accountedFor(s))) {
    await sleep(20)
    s = collector.summary()
  }
  const finished = Date.now()
  const cpu = process.cpuUsage(cpuBefore)
  const workersCpu = cpuOf(workerPids) - workersBefore
  const databaseCpu = cpuOf([databasePid]) - databaseBefore
  const started = messages.find((m) => m.done).started
  await collector.stop()
  fs.rmSync(bufferDir, { recursive: true, force: true })
  s = collector.summary()
  const storedPerSec = Math.round(s.processed / ((finished - started) / 1000))
  return {
    variant,
    round,
    sent: args.reports,
    processed: s.processed,
    dropped: s.dropped.total,
    storedPerSec,
    callsPerSec: Math.round(storedPerSec / 2),
    masterUsPerReport: Math.round((cpu.user + cpu.system) / args.reports * 100) / 100,
    workersUsPerReport: Math.round(workersCpu * 1e6 / args.reports * 10) / 10,
    databaseUsPerReport: Math.round(databaseCpu * 1e6 / args.reports * 10) / 10
  }
}

// The middle value; with an even count, the mean of the two middle ones (not the larger).
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

async function main () {
  const server = await startJavaServer({ port: 0 })
  const results = []
  try {
    // A warm-up of each variant first, not counted: the first run pays for the JIT and the server's start.
    for (let round = -1; round < args.rounds; round++) {
      for (const variant of round % 2 ? ['hep', 'rtcp'] : ['rtcp', 'hep']) {
        const r = await runOnce(variant, server, round)
        if (round >= 0) results.push(r)
        console.log(`${round < 0 ? 'warm-up' : `round ${round}`} ${variant.padEnd(4)} sent ${r.sent} processed ${r.processed} dropped ${r.dropped} stored/s ${r.storedPerSec} calls/s ${r.callsPerSec} µs/report: master ${r.masterUsPerReport} workers ${r.workersUsPerReport} database ${r.databaseUsPerReport}`)
      }
    }
  } finally {
    await server.stop()
  }
  const of = (variant, field) => median(results.filter((r) => r.variant === variant).map((r) => r[field]))
  const summary = {
    rtcp: {},
    hep: {}
  }
  for (const variant of ['rtcp', 'hep']) for (const field of ['storedPerSec', 'masterUsPerReport', 'workersUsPerReport', 'databaseUsPerReport']) summary[variant][field] = of(variant, field)
  summary.storedRatio = Math.round(summary.hep.storedPerSec / summary.rtcp.storedPerSec * 100) / 100
  summary.masterCpuRatio = Math.round(summary.hep.masterUsPerReport / summary.rtcp.masterUsPerReport * 100) / 100
  console.log(`median: HEP ${summary.hep.storedPerSec}/s vs RTCP ${summary.rtcp.storedPerSec}/s stored (ratio ${summary.storedRatio}, target ≥ 0.9); master CPU per report ${summary.hep.masterUsPerReport} vs ${summary.rtcp.masterUsPerReport} µs (ratio ${summary.masterCpuRatio}); workers ${summary.hep.workersUsPerReport} vs ${summary.rtcp.workersUsPerReport}, database ${summary.hep.databaseUsPerReport} vs ${summary.rtcp.databaseUsPerReport} µs`)
  console.log(JSON.stringify({ bench: 'hep-e2e', node: process.version, args: { reports: args.reports, rate: args.rate, calls: args.calls, rounds: args.rounds, memoryBudget: args['memory-budget'] || null }, results, summary }))
}
