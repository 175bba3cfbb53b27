'use strict'

// The RTCP collector end to end: real ffmpeg (SR, SDES, BYE) and GStreamer
// (RR) send through a recording relay to an RtcpCollector with 2 workers
// writing into the real server. The relay's capture, decoded independently,
// says which stream documents must exist.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { once } = require('node:events')
const rtcp = require('../../collectors/rtcp')
const { decodeRtcp } = require('../../collectors/rtcp/decoder')
const { encodeReport } = require('../../collectors/rtcp/encoder')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/streams')
const peers = require('../helpers/rtp-peers')

function startCollector (t, extra = []) {
  return startTestCollector(t, rtcp, extra)
}

async function startRelay (t, targetPort) {
  const socket = dgram.createSocket('udp4')
  const captured = []
  socket.on('message', (data) => {
    captured.push(data)
    socket.send(data, targetPort, peers.HOST)
  })
  socket.bind(0, peers.HOST)
  await once(socket, 'listening')
  t.after(() => socket.close())
  return { captured, port: socket.address().port }
}

test('RTCP from ffmpeg and GStreamer becomes the expected streams', { timeout: 90000 }, async (t) => {
  const { collector, db, port } = await startCollector(t)
  const relay = await startRelay(t, port)
  const rtpPort = await peers.freeUdpPort()
  const gst = await peers.startGstReceiver(t, { rtpPort, rtcpInPort: await peers.freeUdpPort(), rtcpOutPort: relay.port })
  const ffmpeg = peers.startFfmpegSender(t, { rtpPort, rtcpPort: relay.port, seconds: 3, cname: 'ff@test' })
  assert.equal((await ffmpeg.exited).code, 0, ffmpeg.output())
  const decoded = () => relay.captured.map((d) => decodeRtcp(d))
  await waitFor(() => decoded().some((d) => d.packets[0].type === 'RR' && d.packets[0].reports.length > 0), { timeout: 8000 })
  await peers.stopPeer(gst)
  await waitFor(() => collector.summary().received === relay.captured.length)
  await collector.stop()

  const all = decoded()
  const ffSsrc = all.find((d) => d.packets[0].type === 'SR').packets[0].ssrc
  const blocks = all.flatMap((d) => d.packets.filter((p) => p.type === 'RR' || p.type === 'SR')
    .flatMap((p) => p.reports.map((b) => ({ reporter: p.ssrc, ...b }))))
  const pairs = new Set(blocks.map((b) => `${b.reporter}>${b.ssrc}`))
  const docs = await db.collection('streams').find({ openKey: { $exists: true } }).toArray()
  assert.equal(docs.length, pairs.size, `one stream per reporter/source pair: ${[...pairs]}`)
  for (const doc of docs) {
    const mine = blocks.filter((b) => String(b.reporter) === doc.from.ID && String(b.ssrc) === doc.to.ID)
    assert.ok(mine.length > 0, `stream ${doc.from.ID} → ${doc.to.ID} comes from real report blocks`)
    assert.equal(doc.from.highestPacketNum, Math.max(...mine.map((b) => b.highestSeq)))
    assert.equal(doc.metadata.packets, mine.length)
    assert.equal(doc.from.IP_ADDRESS, peers.HOST)
    assert.equal(doc.to.ID, String(ffSsrc), 'GStreamer reports on the ffmpeg source')
    assert.equal(doc.to.packetCount > 0, true, 'the last SR counters land on the sender side')
    assert.equal(doc.stream_ended.to, true, "ffmpeg's BYE ends its side")
  }
  const stats = await collector.summary()
  assert.equal(stats.processed, relay.captured.length)
})

test('malformed RTCP is counted by reason and nothing crashes', async (t) => {
  const { collector, db, port } = await startCollector(t, ['-i', '1'])
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const good = encodeReport({ ssrc: 1, reports: [{ ssrc: 2, fractionLost: 0, cumulativeLost: 0, highestSeq: 70000, jitter: 3, lsr: 0, dlsr: 0 }], cname: 'a@b' })
  const badVersion = Buffer.from(good)
  badVersion[0] = (badVersion[0] & 0x3f) | 0x40
  const datagrams = [good, Buffer.from('hello'), badVersion, good.subarray(0, good.length - 4), Buffer.alloc(0)]
  for (const d of datagrams) socket.send(d, port, peers.HOST)
  await waitFor(() => collector.summary().processed + collector.summary().dropped.total === datagrams.length)
  const [worker] = (await collector.stats()).workers
  const malformed = worker.custom.malformed
  assert.equal(malformed['bad-version'], 1)
  assert.equal(Object.values(malformed).reduce((a, b) => a + b, 0), 4, JSON.stringify(malformed))
  // Refused, so dropped under the same reasons in the master, not processed (stored): only the good one is.
  const summary = collector.summary()
  assert.equal(summary.processed, 1)
  for (const [reason, n] of Object.entries(malformed)) assert.equal(summary.dropped[reason], n, reason)
  await collector.stop()
  const docs = await db.collection('streams').find({ openKey: { $exists: true } }).toArray()
  assert.equal(docs.length, 1)
  assert.equal(docs[0].from.highestPacketNum, 70000)
  assert.equal(docs[0].from.jitter, 3)
})

test('bad flags name every problem; a password in --mongo-uri is refused without echoing it', () => {
  assert.throws(() => new rtcp.Config(['--port', 'x', '--stream-timeout', 'soon', '--mongo-uri', 'mongodb://u:hunter2@h/db']).getConfig(), (err) => {
    assert.equal(err.code, 'ERR_INVALID_CONFIG')
    for (const flag of ['--port', '--stream-timeout', '--mongo-uri']) assert.match(err.message, new RegExp(flag))
    assert.doesNotMatch(err.message, /hunter2/)
    return true
  })
  const base = require('../../configs/load-balancer-config')
  assert.equal(base.flags.port.default, 0, 'the RTCP default port does not leak into the base config')
  assert.equal(new rtcp.Config([]).getConfig().port, 5005)
})

test('--tolerate: an unterminated SDES chunk is refused and counted by default, decoded and counted as a deviation when tolerated', async (t) => {
  // an RR with one block, then an SDES whose chunk has no null octet (RFC 3550 §6.5)
  const rr = encodeReport({ ssrc: 11, reports: [{ ssrc: 12, fractionLost: 0, cumulativeLost: 0, highestSeq: 500, jitter: 1, lsr: 0, dlsr: 0 }], cname: 'x' })
  const rrOnly = rr.subarray(0, (rr.readUInt16BE(2) + 1) * 4)
  const sdes = Buffer.from([0x81, 202, 0, 2, 0, 0, 0, 11, 1, 2, 0x61, 0x62])
  const datagram = Buffer.concat([rrOnly, sdes])
  for (const [flags, tolerated] of [[[], false], [['--tolerate', 'sdes-unterminated'], true]]) {
    const { collector, db, port } = await startCollector(t, ['-i', '1', ...flags])
    const socket = dgram.createSocket('udp4')
    await new Promise((resolve) => socket.send(datagram, port, peers.HOST, resolve))
    socket.close()
    await waitFor(() => collector.summary().processed + collector.summary().failed + collector.summary().dropped.total >= 1)
    const [worker] = (await collector.stats()).workers
    await collector.stop()
    const docs = await db.collection('streams').find({ openKey: { $exists: true } }).toArray()
    if (tolerated) {
      assert.deepEqual(worker.custom.deviations, { 'sdes-unterminated': 1 })
      assert.deepEqual(worker.custom.malformed, {})
      assert.equal(docs.length, 1, 'the report block is stored')
      assert.equal(docs[0].from.highestPacketNum, 500)
    } else {
      assert.deepEqual(worker.custom.malformed, { 'sdes-unterminated': 1 })
      assert.deepEqual(worker.custom.deviations, {})
      assert.equal(docs.length, 0)
    }
  }
})

test('sender reports without report blocks: counted as side updates, stored on the open streams of their SSRC, and visibly reaching none otherwise', async (t) => {
  const { collector, db, port } = await startCollector(t, ['-i', '1'])
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const sender = (packetCount) => ({ ntpSec: 1, ntpFrac: 0, rtpTimestamp: 0, packetCount, octetCount: packetCount * 160 })
  socket.send(encodeReport({ ssrc: 1, reports: [{ ssrc: 2, fractionLost: 0, cumulativeLost: 0, highestSeq: 500, jitter: 1, lsr: 0, dlsr: 0 }], cname: 'one@test' }), port, peers.HOST)
  await waitFor(() => collector.summary().processed === 1)
  // SSRC 2 is the reported side of that stream; 3..202 are in no stream at all.
  const unknown = 200
  socket.send(encodeReport({ ssrc: 2, sender: sender(777), cname: 'two@test' }), port, peers.HOST)
  for (let i = 0; i < unknown; i++) socket.send(encodeReport({ ssrc: 3 + i, sender: sender(i), cname: `x${i}@test` }), port, peers.HOST)
  await waitFor(() => collector.summary().processed === unknown + 2)
  const [worker] = (await collector.stats()).workers
  assert.equal(worker.custom.sideUpdates, unknown + 1)
  assert.equal(worker.custom.sideStreamsUpdated, 1)
  await collector.stop()
  const [doc] = await db.collection('streams').find({ openKey: { $exists: true } }).toArray()
  assert.equal(doc.to.ID, '2')
  assert.equal(doc.to.packetCount, 777)
  assert.equal(doc.to.octetCount, 777 * 160)
})

test('RFC 5506 reduced-size RTCP (a lone NACK, PLI, SDES or BYE) is decoded and counted by type, its CNAME and BYE kept; --no-reduced-size refuses it as first-not-sr-rr', async (t) => {
  const compound = encodeReport({ ssrc: 1, reports: [{ ssrc: 2, fractionLost: 0, cumulativeLost: 0, highestSeq: 900, jitter: 2, lsr: 0, dlsr: 0 }], cname: 'one@rsize' })
  const packet = (hex) => { const b = Buffer.from(hex, 'hex'); b.writeUInt16BE(b.length / 4 - 1, 2); return b }
  const reduced = [
    packet('81cd0000' + '00000002' + '00000001' + '00050003'), // NACK from 2 about 1 (RFC 4585 §6.2.1)
    packet('81ce0000' + '00000002' + '00000001'), // PLI (§6.3.1)
    packet('81ca0000' + '00000002' + '0109' + Buffer.from('two@rsize').toString('hex') + '00'), // SDES: 2's CNAME
    packet('81cb0000' + '00000001') // BYE of 1
  ]
  for (const [flags, accepted] of [[[], true], [['--no-reduced-size'], false]]) {
    const { collector, db, port } = await startCollector(t, ['-i', '1', ...flags])
    const socket = dgram.createSocket('udp4')
    await new Promise((resolve) => socket.send(compound, port, peers.HOST, resolve))
    await waitFor(() => collector.summary().processed === 1)
    for (const d of reduced) await new Promise((resolve) => socket.send(d, port, peers.HOST, resolve))
    socket.close()
    await waitFor(() => collector.summary().processed + collector.summary().dropped.total === 5)
    const [worker] = (await collector.stats()).workers
    await collector.stop()
    const [doc] = await db.collection('streams').find().toArray()
    if (accepted) {
      assert.deepEqual(worker.custom.reducedSize, { RTPFB: 1, PSFB: 1, SDES: 1, BYE: 1 })
      assert.deepEqual(worker.custom.malformed, {})
      assert.equal(collector.summary().processed, 5)
      assert.equal(doc.to.cname, 'two@rsize', 'the lone SDES reached the reported side')
      assert.equal(doc.stream_ended.from, true, "the lone BYE ended the reporter's side")
    } else {
      assert.deepEqual(worker.custom.malformed, { 'first-not-sr-rr': 4 })
      assert.equal(collector.summary().dropped['first-not-sr-rr'], 4)
      assert.equal(doc.to.cname, undefined)
    }
  }
})

test('SRTCP (RFC 3711) from ffmpeg is refused as srtcp, with either tag length, nothing of its ciphertext stored; its plain RTCP is stored', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startCollector(t)
  for (const srtp of ['AES_CM_128_HMAC_SHA1_80', 'AES_CM_128_HMAC_SHA1_32']) {
    const ffmpeg = peers.startFfmpegSender(t, { rtpPort: await peers.freeUdpPort(), rtcpPort: port, seconds: 2, srtp })
    const exit = await ffmpeg.exited
    assert.equal(exit.code, 0, `ffmpeg failed:\n${ffmpeg.output()}`)
  }
  const s = await waitFor(() => { const s = collector.summary(); return s.received >= 4 && s.inFlight === 0 ? s : null }, { what: 'the SRTCP datagrams counted' })
  assert.equal(s.dropped.srtcp, s.received, JSON.stringify(s.dropped))
  assert.equal(s.processed, 0)
  assert.equal(await db.collection('streams').countDocuments(), 0, 'no stream of ciphertext')
  // The same sender without SRTP: its reports are stored (the srtcp test does not refuse plain RTCP).
  const plain = peers.startFfmpegSender(t, { rtpPort: await peers.freeUdpPort(), rtcpPort: port, seconds: 2 })
  assert.equal((await plain.exited).code, 0)
  const after = await waitFor(() => { const a = collector.summary(); return a.processed >= 2 && a.inFlight === 0 ? a : null }, { what: 'the plain RTCP processed' })
  assert.equal(after.dropped.srtcp, s.dropped.srtcp)
  assert.equal(after.processed, after.received - s.received)
})
