'use strict'

// Per-sender state is bounded: the real RTCP collector (its master in a
// process of its own, 2 workers writing into the test server) receives an
// SR from each of 50,000 distinct source ports, each from a new reporter
// SSRC about a new reported SSRC, with --max-sources far below that. Every
// map keyed by those SSRCs ends holding exactly its bound, and what it
// forgot is counted per map: the master's call affinity under
// eventReasons.stateEvicted.callAffinity, each worker's maps under
// evicted.<map> of its stats. Eviction costs no data: every datagram is
// accounted for and every stream is stored. The master's and the workers'
// resident memory (VmRSS) are reported as diagnostics.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const fs = require('node:fs')
const { encodeRtcp } = require('../../collectors/rtcp/encoder')
const { waitFor } = require('../helpers/wait-for')
const { startRtcpMaster } = require('../helpers/rtcp-master')

const HOST = '127.0.0.1'
const SENDERS = 50000
const BOUND = 1000 // --max-sources
const FIRST_PORT = 10000
const PER_ROUND = 500 // sockets open at once; the next round waits until these arrived
const REPORTER0 = 0x10000000
const REPORTED0 = 0x20000000
const CALL_MAPS = ['ssrcs', 'reportSides'] // the workers' maps keyed by the SSRCs (call-quality.js)

/** The collector in its own process, driven over IPC (test/fixtures/rtcp-master.js). */
function startMaster (t, argv) {
  return startRtcpMaster(t, argv, 'state')
}

/** SR i: reporter REPORTER0 + i about REPORTED0 + i, both new. */
function senderReport (i) {
  return encodeRtcp([{
    type: 'SR', ssrc: REPORTER0 + i, ntpSec: 3900000000 + i, ntpFrac: 0, rtpTimestamp: i * 160, packetCount: 100, octetCount: 16000,
    reports: [{ ssrc: REPORTED0 + i, fractionLost: 0, cumulativeLost: 0, highestSeq: 1000, jitter: 0, lsr: 0, dlsr: 0 }]
  }])
}

function bind (socket, port) {
  return new Promise((resolve, reject) => {
    socket.once('error', reject)
    socket.bind(port, HOST, () => {
      socket.off('error', reject)
      resolve()
    })
  })
}

/**
 * Sends datagram(i) for i < count, each from a socket bound to a source
 * port of its own (ports in use elsewhere are skipped), PER_ROUND at a time;
 * a round waits until `received()` counts everything sent before it, so the
 * kernel's receive buffer never overflows. Resolves with the ports used.
 */
async function sendFromDistinctPorts (port, count, datagram, received) {
  const ports = new Set()
  let candidate = FIRST_PORT
  while (ports.size < count) {
    const sockets = []
    while (sockets.length < Math.min(PER_ROUND, count - ports.size)) {
      assert.ok(candidate <= 65535, `ran out of free source ports after ${ports.size + sockets.length}`)
      const socket = dgram.createSocket('udp4')
      socket.on('error', () => {})
      try {
        await bind(socket, candidate++)
        sockets.push(socket)
      } catch {
        socket.close()
      }
    }
    await Promise.all(sockets.map((socket) => new Promise((resolve, reject) => {
      const i = ports.size
      ports.add(socket.address().port)
      socket.send(datagram(i), port, HOST, (err) => err ? reject(err) : resolve())
    })))
    await Promise.all(sockets.map((socket) => new Promise((resolve) => socket.close(resolve))))
    const sent = ports.size
    await waitFor(async () => await received() >= sent, { timeout: 30000, what: `${sent} datagrams received` })
  }
  return ports
}

/** Resident memory of a process in KiB (/proc/PID/status VmRSS). */
function rssKiB (pid) {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(match[1])
}

test('50,000 senders: every SSRC-keyed map holds its bound, evictions are counted per map, nothing is lost', { timeout: 240000 }, async (t) => {
  const master = await startMaster(t, ['--max-sources', String(BOUND)])
  const ports = await sendFromDistinctPorts(master.port, SENDERS, senderReport, async () => (await master.ask('summary')).received)
  assert.equal(ports.size, SENDERS)
  await waitFor(async () => (await master.ask('summary')).processed === SENDERS, { timeout: 120000, what: 'every datagram stored' })

  const stats = await master.ask('stats')
  const memory = { masterKiB: rssKiB(master.pid), workersKiB: stats.workers.map((w) => rssKiB(w.pid)) }
  t.diagnostic(`VmRSS after ${SENDERS} senders, --max-sources ${BOUND}: master ${memory.masterKiB} KiB, workers ${memory.workersKiB.join(' / ')} KiB`)

  // The master: one reported SSRC per datagram, all new, BOUND of them kept.
  assert.equal(stats.eventReasons.stateEvicted.callAffinity, SENDERS - BOUND)
  assert.equal(stats.events.stateEvicted, SENDERS - BOUND)

  // Each worker: one new reporter, side and call per datagram it processed.
  assert.equal(stats.workers.length, 2)
  for (const worker of stats.workers) {
    const { held, evicted } = worker.custom
    assert.ok(worker.processed > BOUND, `slot ${worker.slot} saw more senders (${worker.processed}) than it may remember`)
    for (const map of CALL_MAPS) {
      assert.equal(held[map], BOUND, `slot ${worker.slot} holds ${map} up to its bound`)
      assert.equal(evicted[map], worker.processed - BOUND, `slot ${worker.slot} counts each ${map} key it forgot`)
    }
    assert.ok(held.streamSides <= 200000 && held.watermarks <= 100000, 'the writer\'s maps within their declared bounds')
  }

  // Forgetting call state costs no stored data.
  assert.equal(await master.db.collection('streams').countDocuments({}), SENDERS, 'one stream per reporter/reported pair')
  const summary = await master.ask('stop')
  assert.equal(summary.inFlight, 0)
  assert.equal(summary.received + summary.dropped.kernel, summary.processed + summary.failed + summary.dropped.total)
  assert.equal(summary.processed, SENDERS)
  assert.equal(summary.dropped.total, 0, JSON.stringify(summary.dropped))
})
