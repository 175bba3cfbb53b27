'use strict'
// What `collector verify` reads as sample messages (app/verify/samples.js,
// app/verify/pcap.js): a text file's lines, a classic pcap file's UDP
// payloads in order, whatever its link type and byte order, and nothing
// else (TCP, fragments, truncated captures skipped and counted; pcapng
// refused with the way out).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { buildPcap } = require('../helpers/pcap')
const { flowPcap, makeFlows } = require('../helpers/netflow-pcap')
const { readPcap, looksLikePcap } = require('../../app/verify/pcap')
const { readSamples } = require('../../app/verify/samples')
const { removeDir } = require('../helpers/temp-dir')

function tempFile (t, name, content) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verify-samples-'))
  t.after(() => removeDir(dir))
  const file = path.join(dir, name)
  fs.writeFileSync(file, content)
  return file
}

// A pcap of `frames` (link-layer bytes) with link type `link`, big- or little-endian.
function pcapOf (link, frames, { bigEndian = false } = {}) {
  const u32 = (n) => { const b = Buffer.alloc(4); bigEndian ? b.writeUInt32BE(n) : b.writeUInt32LE(n); return b }
  const u16 = (n) => { const b = Buffer.alloc(2); bigEndian ? b.writeUInt16BE(n) : b.writeUInt16LE(n); return b }
  const head = Buffer.concat([u32(0xa1b2c3d4), u16(2), u16(4), u32(0), u32(0), u32(65535), u32(link)])
  return Buffer.concat([head, ...frames.flatMap((frame, i) => [u32(1000 + i), u32(0), u32(frame.length), u32(frame.length), frame])])
}

function ipv4Udp (payload, { flags = 0x4000 } = {}) {
  const ip = Buffer.alloc(20)
  ip[0] = 0x45
  ip.writeUInt16BE(28 + payload.length, 2)
  ip.writeUInt16BE(flags, 6)
  ip[9] = 17
  const udp = Buffer.alloc(8)
  udp.writeUInt16BE(1234, 0)
  udp.writeUInt16BE(2055, 2)
  udp.writeUInt16BE(8 + payload.length, 4)
  return Buffer.concat([ip, udp, payload])
}

test('the UDP payloads of an Ethernet pcap, in order', () => {
  const datagrams = ['one', 'two', 'three'].map((text) => ({ data: Buffer.from(text), srcPort: 5000, dstPort: 5005 }))
  const out = readPcap(buildPcap(datagrams))
  assert.deepEqual(out.datagrams.map((d) => d.data.toString()), ['one', 'two', 'three'])
  assert.deepEqual(out.datagrams.map((d) => d.dstPort), [5005, 5005, 5005])
})

test('TCP and IPv6 frames: only UDP is taken, over either family', () => {
  const flows = makeFlows({ seed: 3, count: 40, ipv6Share: 0.5 })
  const out = readPcap(flowPcap(flows))
  const udp = flows.filter((f) => f.proto === 17).reduce((n, f) => n + f.packets.length, 0)
  assert.equal(out.datagrams.length, udp)
  assert.equal(out.skipped.notUdp, flows.reduce((n, f) => n + f.packets.length, 0) - udp)
  assert.ok(flows.some((f) => f.proto === 17 && f.family === 6), 'the seed has IPv6 UDP flows')
})

test('raw IP, a VLAN tag, big-endian files, fragments skipped', () => {
  const raw = readPcap(pcapOf(101, [ipv4Udp(Buffer.from('raw')), ipv4Udp(Buffer.from('frag'), { flags: 0x2000 })], { bigEndian: true }))
  assert.deepEqual(raw.datagrams.map((d) => d.data.toString()), ['raw'])
  assert.deepEqual(raw.skipped, { fragment: 1 })
  const tagged = Buffer.concat([Buffer.alloc(12), Buffer.from([0x81, 0x00, 0x00, 0x07, 0x08, 0x00]), ipv4Udp(Buffer.from('vlan'))])
  assert.deepEqual(readPcap(pcapOf(1, [tagged])).datagrams.map((d) => d.data.toString()), ['vlan'])
})

test('a pcapng or a cut file is refused with what to do', () => {
  const pcapng = Buffer.from([0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0])
  assert.ok(looksLikePcap(pcapng))
  assert.throws(() => readPcap(pcapng, 'x.pcapng'), /editcap -F pcap/)
  const whole = buildPcap([{ data: Buffer.from('abc'), srcPort: 1, dstPort: 2 }])
  assert.throws(() => readPcap(whole.subarray(0, whole.length - 1), 'cut.pcap'), /cut short/)
})

test('a text file is one message a line (CRLF too, empty lines skipped); files in order; --udp-port filters', (t) => {
  const text = tempFile(t, 'lines.txt', 'a:1|c\r\n\nb:2|c\nc:3|c')
  const pcap = tempFile(t, 'sample.pcap', buildPcap([{ data: Buffer.from('x'), srcPort: 1, dstPort: 9 }, { data: Buffer.from('y'), srcPort: 1, dstPort: 8 }]))
  const { messages, files } = readSamples([text, pcap], { udpPort: 9 })
  assert.deepEqual(messages.map(String), ['a:1|c', 'b:2|c', 'c:3|c', 'x'])
  assert.deepEqual(files.map((f) => [f.format, f.messages]), [['lines', 3], ['pcap', 1]])
  assert.deepEqual(files[1].skipped, { otherPort: 1 })
  assert.throws(() => readSamples([path.join(os.tmpdir(), 'no-such-sample.txt')]), /no such file/)
})
