'use strict'

// RTCP from real, independent peers: ffmpeg sends RTP + RTCP (SR, SDES,
// BYE), GStreamer's rtpbin receives the RTP and sends receiver reports.
// Every datagram must decode, and tshark's dissection of the same bytes
// (written to a pcap) must agree with the decoder field by field.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { once } = require('node:events')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')
const { decodeRtcp } = require('../../collectors/rtcp/decoder')
const { toStreamUpdates } = require('../../collectors/rtcp/to-stream-updates')
const { PT, SDES_ITEM } = require('../../collectors/rtcp/constants')
const { pushReport } = require('../helpers/tshark-rtcp')
const { writePcap } = require('../helpers/pcap')
const peers = require('../helpers/rtp-peers')
const { removeDir } = require('../helpers/temp-dir')

const SECONDS = 3
const CNAME = 'ffmpeg@collector-test'

/** Receive datagrams; relay ffmpeg's SRs to GStreamer so its RRs carry LSR/DLSR. */
async function openCollector (t) {
  const socket = dgram.createSocket('udp4')
  const captured = []
  socket.on('message', (data, rinfo) => {
    captured.push({ data, rinfo, time: Date.now() })
    if (socket.relayPort && data[1] === PT.SR) socket.send(data, socket.relayPort, peers.HOST)
  })
  socket.bind(0, peers.HOST)
  await once(socket, 'listening')
  t.after(() => socket.close())
  return { socket, captured, port: socket.address().port }
}

async function waitUntil (predicate, ms) {
  const deadline = Date.now() + ms
  while (!predicate() && Date.now() < deadline) await sleep(50)
  return predicate()
}

const hasReportBlocks = (d) => d.packets[0].type === 'RR' && d.packets[0].reports.length > 0
const echoesAnSr = (d) => hasReportBlocks(d) && d.packets[0].reports.some((b) => b.lsr !== 0)

/** Run the scenario once; all tests below share its capture. */
async function capture (t) {
  peers.requireBinary('tshark', 'tshark')
  const collector = await openCollector(t)
  const rtpPort = await peers.freeUdpPort()
  collector.socket.relayPort = await peers.freeUdpPort()
  const gst = await peers.startGstReceiver(t, { rtpPort, rtcpInPort: collector.socket.relayPort, rtcpOutPort: collector.port })
  const ffmpeg = peers.startFfmpegSender(t, { rtpPort, rtcpPort: collector.port, seconds: SECONDS, cname: CNAME })
  const ffExit = await ffmpeg.exited
  assert.equal(ffExit.code, 0, `ffmpeg failed:\n${ffmpeg.output()}`)
  const gotRr = await waitUntil(() => collector.captured.some((c) => echoesAnSr(decodeRtcp(c.data))), 5000)
  assert.ok(gotRr, `no receiver report from GStreamer with a report block echoing an SR (LSR); its output:\n${gst.output()}`)
  await peers.stopPeer(gst)
  await sleep(100)
  return collector
}

test('real ffmpeg and GStreamer RTCP decodes and agrees with tshark', { timeout: 60000 }, async (t) => {
  const collector = await capture(t)
  const decoded = collector.captured.map((c) => decodeRtcp(c.data))
  const ffSsrc = decoded.find((d) => d.packets[0].type === 'SR').packets[0].ssrc
  const fromFfmpeg = decoded.filter((d) => d.packets[0].ssrc === ffSsrc)
  const fromGst = decoded.filter((d) => d.packets[0].ssrc !== ffSsrc)

  t.diagnostic(`captured ${decoded.length} datagrams: ${decoded.map(describe).join(' | ')}`)

  await t.test('ffmpeg: SR + SDES CNAME each time, BYE at the end, growing counters', () => {
    assert.ok(fromFfmpeg.length >= 2, `expected at least 2 ffmpeg reports, got ${fromFfmpeg.length}`)
    for (const d of fromFfmpeg) {
      assert.equal(d.packets[0].type, 'SR')
      assert.equal(cnameOf(d, ffSsrc), CNAME)
    }
    const counts = fromFfmpeg.map((d) => d.packets[0].packetCount)
    assert.deepEqual([...counts].sort((a, b) => a - b), counts, `packet counts never go down: ${counts}`)
    assert.ok(counts.at(-1) > counts[0], `packet count grows: ${counts}`)
    assert.ok(fromFfmpeg.at(-1).packets[0].octetCount > fromFfmpeg[0].packets[0].octetCount)
    const last = fromFfmpeg.at(-1).packets.at(-1)
    assert.deepEqual([last.type, last.sources], ['BYE', [ffSsrc]])
  })

  await t.test('GStreamer: RR about the ffmpeg source, LSR echoing one of its SRs', () => {
    const withBlocks = fromGst.filter(hasReportBlocks)
    assert.ok(withBlocks.some(echoesAnSr), 'at least one RR with a report block echoing a relayed SR')
    const srLsr = fromFfmpeg.map((d) => middle32(d.packets[0]))
    for (const d of withBlocks) {
      const [rr] = d.packets
      const block = rr.reports.find((b) => b.ssrc === ffSsrc)
      assert.ok(block, `RR reports on ffmpeg's SSRC ${ffSsrc}`)
      assert.equal(block.fractionLost, 0, 'no loss on loopback')
      if (block.lsr !== 0) assert.ok(srLsr.includes(block.lsr), `LSR ${block.lsr} is the middle of one of ${srLsr}`)
      if (block.lsr !== 0) assert.ok(block.dlsr > 0 && block.dlsr < 5 * 65536, `DLSR ${block.dlsr}/65536 s is a short delay`)
      assert.ok(cnameOf(d, rr.ssrc), 'RR comes with an SDES CNAME')
    }
  })

  await t.test('toStreamUpdates maps the real reports', () => {
    const items = collector.captured.flatMap((c, i) => toStreamUpdates(decoded[i], c.rinfo, c.time))
    const packets = items.filter((i) => i.fromID)
    assert.ok(packets.some((p) => p.toID === String(ffSsrc) && p.IP === peers.HOST && p.fields.fractionLost === 0))
    assert.ok(items.some((i) => i.sideID === String(ffSsrc) && i.fields.cname === CNAME && i.fields.packetCount >= 0))
    assert.ok(items.some((i) => i.endID === String(ffSsrc)))
  })

  await t.test('tshark dissects every datagram exactly as the decoder does', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtcp-peers-'))
    t.after(() => removeDir(dir))
    const file = path.join(dir, 'rtcp.pcap')
    await writePcap(file, collector.captured.map((c) => ({ data: c.data, srcPort: c.rinfo.port, dstPort: collector.port, time: c.time })))
    const frames = await tsharkFrames(file, collector.port)
    assert.equal(frames.length, decoded.length, 'tshark sees one frame per datagram')
    decoded.forEach((d, i) => {
      assert.deepEqual(frames[i].numbers, expectedNumbers(d), `frame ${i + 1} numeric fields (${describe(d)})`)
      assert.deepEqual(frames[i].sdes, expectedSdes(d), `frame ${i + 1} SDES items`)
      assert.equal(frames[i].malformed, '', `tshark finds frame ${i + 1} well formed`)
      assert.ok(frames[i].lengthCheck.every((v) => v === '1'), `tshark's length check passes on frame ${i + 1}`)
    })
  })
})

function describe (d) {
  return d.packets.map((p) => p.type + (p.reports ? `(${p.reports.length})` : '')).join('+')
}

function cnameOf (d, ssrc) {
  const chunk = d.packets.filter((p) => p.type === 'SDES').flatMap((p) => p.chunks).find((c) => c.ssrc === ssrc)
  return chunk && chunk.items.cname
}

/** The compact NTP timestamp an RR's LSR carries (RFC 3550 §6.4.1). */
function middle32 (sr) {
  return (((sr.ntpSec & 0xffff) << 16) | (sr.ntpFrac >>> 16)) >>> 0
}

const NUMERIC_FIELDS = [
  'rtcp.pt', 'rtcp.senderssrc',
  'rtcp.timestamp.ntp.msw', 'rtcp.timestamp.ntp.lsw', 'rtcp.timestamp.rtp',
  'rtcp.sender.packetcount', 'rtcp.sender.octetcount',
  'rtcp.ssrc.identifier', 'rtcp.ssrc.fraction', 'rtcp.ssrc.cum_nr', 'rtcp.ssrc.ext_high',
  'rtcp.ssrc.jitter', 'rtcp.ssrc.lsr', 'rtcp.ssrc.dlsr'
]
const TEXT_FIELDS = ['rtcp.sdes.type', 'rtcp.sdes.text', 'rtcp.length_check', '_ws.malformed']
const AGGREGATOR = '\u001f'

async function tsharkFrames (file, port) {
  const fields = [...NUMERIC_FIELDS, ...TEXT_FIELDS].flatMap((f) => ['-e', f])
  const { code, stdout, stderr } = await peers.run('tshark', [
    '-r', file, '-d', `udp.port==${port},rtcp`, '-T', 'fields',
    '-E', 'separator=/t', '-E', 'occurrence=a', '-E', `aggregator=${AGGREGATOR}`, ...fields
  ])
  assert.equal(code, 0, `tshark failed: ${stderr}`)
  return stdout.split('\n').filter(Boolean).map(parseFrame)
}

function parseFrame (line) {
  const columns = line.split('\t').map((c) => (c === '' ? [] : c.split(AGGREGATOR)))
  const byName = {}
  ;[...NUMERIC_FIELDS, ...TEXT_FIELDS].forEach((name, i) => { byName[name] = columns[i] || [] })
  const numbers = Object.fromEntries(NUMERIC_FIELDS.map((name) => [name, byName[name].map(Number)]))
  return {
    numbers,
    sdes: pairSdes(byName['rtcp.sdes.type'].map(Number), byName['rtcp.sdes.text']),
    lengthCheck: byName['rtcp.length_check'],
    malformed: byName['_ws.malformed'].join('')
  }
}

/** tshark lists item types (with END as 0) and texts (BYE reasons too) apart. */
function pairSdes (types, texts) {
  const items = types.filter((type) => type !== 0)
  return items.map((type, i) => `${type}:${texts[i]}`).sort()
}

/** What tshark should show for a decoded datagram, in its field order. */
function expectedNumbers (decoded) {
  const out = Object.fromEntries(NUMERIC_FIELDS.map((name) => [name, []]))
  const push = (name, value) => out[name].push(value)
  for (const p of decoded.packets) {
    push('rtcp.pt', PT[p.type])
    if (p.type === 'SR' || p.type === 'RR') pushReport(push, p)
    if (p.type === 'SDES') p.chunks.forEach((c) => push('rtcp.ssrc.identifier', c.ssrc))
    if (p.type === 'BYE') p.sources.forEach((s) => push('rtcp.ssrc.identifier', s))
  }
  return out
}

function expectedSdes (decoded) {
  const items = []
  for (const p of decoded.packets.filter((x) => x.type === 'SDES')) {
    for (const chunk of p.chunks) {
      for (const [name, value] of Object.entries(chunk.items)) {
        if (SDES_ITEM[name]) items.push(`${SDES_ITEM[name]}:${value}`)
      }
    }
  }
  return items.sort()
}
