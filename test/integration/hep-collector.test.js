'use strict'

// The HEP collector end to end over real sockets, fed by an independent
// HEP encoder (hep-js): a SIP dialog and the RTCP of both media directions
// as an agent sends them become one call document and two stream sides
// tagged with the Call-ID, stamped with the capture time; refusals are
// counted by reason; TCP carries the same packets framed by their length.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const dgram = require('node:dgram')
const net = require('node:net')
const tls = require('node:tls')
const zlib = require('node:zlib')
const { once } = require('node:events')
const HEPjs = require('hep-js')
const hep = require('../../collectors/hep')
const { byeTagOf, callOutcome } = require('../../collectors/hep/calls')
const { startTestCollector } = require('../helpers/collector')
const { getTestMongo } = require('../helpers/mongo')
const { makeTlsFixtures } = require('../helpers/tls-certs')
const callsCommand = require('../../app/commands/calls')
const sipView = require('../../app/commands/calls-sip-view')
const { waitFor } = require('../helpers/streams')
const { killLoop } = require('../helpers/kill-loop')
const { accountedFor } = require('../../lib/master/counters')
const { removeDir } = require('../helpers/temp-dir')

const HOST = '127.0.0.1'
const T0 = Math.floor(Date.now() / 1000) * 1000 - 3600000 // capture times: an hour ago, so that a stamp of arrival shows

function rcinfo (type, { at, src = ['10.0.0.1', 5060], dst = ['10.0.0.2', 5060], correlation, password } = {}) {
  return {
    protocolFamily: 2,
    protocol: 17,
    srcIp: src[0],
    srcPort: src[1],
    dstIp: dst[0],
    dstPort: dst[1],
    timeSeconds: Math.floor(at / 1000),
    timeUseconds: (at % 1000) * 1000,
    payloadType: type,
    captureId: 7,
    hepNodeName: 'test-agent',
    ...(password ? { capturePass: password } : {}),
    ...(correlation ? { correlation_id: correlation } : {})
  }
}

// A HEP3 packet whose payload comes compressed (chunk 0x10), as captagent
// sends it (hep-js writes only chunk 0x0f), with the auth key if given.
function gzipped (type, compressed, password) {
  const chunk = (kind, body) => {
    const head = Buffer.alloc(6)
    head.writeUInt16BE(kind, 2)
    head.writeUInt16BE(6 + body.length, 4)
    return Buffer.concat([head, body])
  }
  const chunks = [chunk(0x0b, Buffer.from([type])), ...(password ? [chunk(0x0e, Buffer.from(password))] : []), chunk(0x10, compressed)]
  const packet = Buffer.concat([Buffer.from('HEP3\0\0', 'latin1'), ...chunks])
  packet.writeUInt16BE(packet.length, 4)
  return packet
}

function sipMessage (startLine, { callId, from, to, cseq }) {
  return [startLine, 'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1', `From: ${from}`, `To: ${to}`, `Call-ID: ${callId}`, `CSeq: ${cseq}`, 'Content-Length: 0', '', ''].join('\r\n')
}

/**
 * The HEP packets of one answered call, hung up by the callee: SIP, and
 * `reports` RTCP receiver reports from each side (rtpengine's JSON) whose
 * highest sequence number rises by 50 each; SSRCs `ssrc` (A) and `ssrc` + 1 (B).
 */
function callPackets (callId, { password, reports = 1, ssrc = 111 } = {}) {
  const alice = '"Alice" <sip:alice@a.example.com>;tag=a1'
  const bob = '<sip:+4930123@b.example.com>'
  const bobTagged = `${bob};tag=b1`
  const sip = (line, headers, at, dir = 'ab') => HEPjs.encapsulate(sipMessage(line, { callId, ...headers }), rcinfo(1, { at, password, ...(dir === 'ba' ? { src: ['10.0.0.2', 5060], dst: ['10.0.0.1', 5060] } : {}) }))
  const rtcp = (json, at, src, dst) => HEPjs.encapsulate(JSON.stringify(json), rcinfo(5, { at, password, correlation: callId, src, dst }))
  const block = (source, seq, lost) => ({ source_ssrc: source, highest_seq_no: seq, fraction_lost: 0, ia_jitter: 40, packets_lost: lost, lsr: 0, dlsr: 0 })
  const media = []
  for (let r = 0; r < reports; r++) {
    media.push(rtcp({ ssrc, type: 201, report_count: 1, report_blocks: [block(ssrc + 1, 1200 + 50 * r, 5)] }, T0 + 8000 + 5000 * r, ['10.0.0.1', 30001], ['10.0.0.2', 40001]))
    media.push(rtcp({ ssrc: ssrc + 1, type: 201, report_count: 1, report_blocks: [block(ssrc, 1199 + 50 * r, 2)] }, T0 + 8100 + 5000 * r, ['10.0.0.2', 40001], ['10.0.0.1', 30001]))
  }
  return [
    sip('INVITE sip:+4930123@b.example.com SIP/2.0', { from: alice, to: bob, cseq: '1 INVITE' }, T0),
    sip('SIP/2.0 180 Ringing', { from: alice, to: bobTagged, cseq: '1 INVITE' }, T0 + 500, 'ba'),
    sip('SIP/2.0 200 OK', { from: alice, to: bobTagged, cseq: '1 INVITE' }, T0 + 3000, 'ba'),
    sip('ACK sip:+4930123@b.example.com SIP/2.0', { from: alice, to: bobTagged, cseq: '1 ACK' }, T0 + 3010),
    ...media,
    sip('BYE sip:alice@10.0.0.1 SIP/2.0', { from: bobTagged, to: alice, cseq: '1 BYE' }, T0 + 20000 + 5000 * reports, 'ba')
  ]
}

async function sendUdp (t, port, packets) {
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  for (const packet of packets) await new Promise((resolve, reject) => socket.send(packet, port, HOST, (err) => err ? reject(err) : resolve()))
}

// The rows of a `collector calls` table, by the header's titles (cells split on two spaces or more).
function tableRows (text) {
  const lines = text.trimEnd().split('\n')
  const header = lines[0].split(/\s{2,}/)
  const rows = []
  for (const line of lines.slice(1)) {
    if (line === '' || !/\s{2,}/.test(line)) break
    const cells = line.split(/\s{2,}/)
    rows.push(Object.fromEntries(header.map((title, i) => [title, cells[i]])))
  }
  return rows
}

function assertCall (call, callId, endedAt = T0 + 25000) {
  assert.equal(call.callId, callId)
  assert.deepEqual(call.caller, { user: 'alice', host: 'a.example.com' })
  assert.deepEqual(call.callee, { user: '+4930123', host: 'b.example.com' })
  assert.equal(+call.invitedAt, T0, 'the capture time, not the arrival')
  assert.equal(+call.answeredAt, T0 + 3000)
  assert.equal(+callOutcome(call).endedAt, endedAt, 'ended by the BYE (read from its dialog\'s, byes)')
  assert.equal(call.final % 1000, 200)
  assert.notEqual(byeTagOf(call), call.callerTag, 'the callee hung up')
}

// `collector calls ARGV --since 1d` (unless ARGV gives --from) on `db`, as an operator runs it: its output, its exit code checked 0.
async function callsCommandOn (db) {
  const { uri } = await getTestMongo()
  return async (...argv) => {
    let out = ''
    const window = argv.includes('--from') || argv.includes('--call-id') ? [] : ['--since', '1d']
    const code = await callsCommand.run([...argv, ...window, '--database', db.databaseName], { env: { MONGODB_URI: uri }, out: { write: (text) => { out += text } }, err: { write: () => {} } })
    assert.equal(code, 0)
    return out
  }
}

test('a SIP dialog and its RTCP over HEP (UDP) become one call and two stream sides tagged with the Call-ID', async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const callId = 'call-1@a.example.com'
  const packets = callPackets(callId)
  const sentAt = Date.now()
  await sendUdp(t, port, packets)
  await waitFor(() => collector.summary().processed === packets.length)
  await collector.stop()
  // Packets are counted at their arrival, not at the agent's capture time
  // (an hour before): the counter's day is what retention ages it by.
  const [counter] = await db.collection('counters').find({ daily: { $gt: 0 } }).toArray() // not a preallocated next day
  const hourOf = (ms) => new Date(ms).toISOString().slice(11, 13)
  const arrivalHours = new Set([hourOf(sentAt), hourOf(Date.now())])
  assert.ok(counter.daily > 0, 'packets counted')
  assert.equal([...arrivalHours].reduce((n, h) => n + (counter.hourly[h] || 0), 0), counter.daily, `counted in the hour they arrived, not the capture's (${hourOf(T0)}): ${JSON.stringify(counter.hourly)}`)
  const calls = await db.collection('calls').find().toArray()
  assert.equal(calls.length, 1)
  assertCall(calls[0], callId)
  const streams = await db.collection('streams').find({ openKey: { $exists: true } }).toArray()
  assert.equal(streams.length, 1, 'both directions of the media make one stream')
  const [stream] = streams
  assert.deepEqual([stream.from.callId, stream.to.callId], [callId, callId])
  assert.equal(stream.from.IP_ADDRESS, '10.0.0.1', 'the media endpoint, not the agent')
  assert.equal(+stream.startTime, T0 + 8000, 'stamped with the capture time')
  // collector calls finds it by Call-ID and by number, with its SIP outcome.
  const callsOf = await callsCommandOn(db)
  const [line] = (await callsOf('--call-id', callId, '--json')).trim().split('\n').map((text) => JSON.parse(text))
  assert.equal(line.callId, callId)
  assert.deepEqual([line.caller, line.callee], [{ user: 'alice', host: 'a.example.com' }, { user: '+4930123', host: 'b.example.com' }])
  assert.deepEqual([line.sip.status, line.sip.answered, line.sip.endedBy], [200, true, 'callee'])
  assert.ok(line.analytics, 'the same analytics as any call')
  const table = await callsOf('--number', '+4930123')
  const row = tableRows(table)[0]
  assert.deepEqual([row['CALL-ID'], row.CALLER, row.CALLEE, row.SIP], [callId, 'alice@a.example.com', '+4930123@b.example.com', '200, callee hung up'])
  assert.equal(row.RING, '0.5s', 'INVITE to 180')
  assert.equal(row.DURATION, '22.0s', 'answer to BYE, from SIP')
  // The BYE ended both sides of the call's stream (the sweeper closes it after byeGrace, as an RTCP BYE).
  assert.deepEqual(stream.stream_ended, { from: true, to: true })
  assert.equal(+stream.endedAt, T0 + 25000)
  assert.equal((await callsOf('--number', '+0000', '--json')).trim(), '', 'no call of that number')
})

// The SIP of calls that are not answered, as the hep collector's agents
// copy them: rejected (486), cancelled (CANCEL, 487), still ringing.
function unansweredCalls () {
  const alice = '"Alice" <sip:alice@a.example.com>;tag=a1'
  const callee = (user) => `<sip:${user}@b.example.com:5060>`
  const make = (callId, user, steps) => steps.map(([line, cseq, dir, offset, tagged]) => ({
    callId,
    at: T0 + offset,
    dir,
    text: sipMessage(line, { callId, from: alice, to: tagged ? `${callee(user)};tag=b9` : callee(user), cseq })
  }))
  return [
    ...make('rejected@a', '+4930555', [
      ['INVITE sip:+4930555@b.example.com SIP/2.0', '1 INVITE', 'ab', 1000],
      ['SIP/2.0 100 Trying', '1 INVITE', 'ba', 1010],
      ['INVITE sip:+4930555@b.example.com SIP/2.0', '1 INVITE', 'ab', 1500], // a retransmission: kept
      ['SIP/2.0 486 Busy Here', '1 INVITE', 'ba', 1600, true],
      ['ACK sip:+4930555@b.example.com SIP/2.0', '1 ACK', 'ab', 1610, true]
    ]),
    ...make('cancelled@a', '+4930666', [
      ['INVITE sip:+4930666@b.example.com SIP/2.0', '1 INVITE', 'ab', 2000],
      ['SIP/2.0 180 Ringing', '1 INVITE', 'ba', 2300, true],
      ['CANCEL sip:+4930666@b.example.com SIP/2.0', '1 CANCEL', 'ab', 6000],
      ['SIP/2.0 200 OK', '1 CANCEL', 'ba', 6010, true],
      ['SIP/2.0 487 Request Terminated', '1 INVITE', 'ba', 6020, true],
      ['ACK sip:+4930666@b.example.com SIP/2.0', '1 ACK', 'ab', 6030, true]
    ]),
    ...make('ringing@a', '+4930777', [
      ['INVITE sip:+4930777@b.example.com SIP/2.0', '1 INVITE', 'ab', 7000],
      ['SIP/2.0 180 Ringing', '1 INVITE', 'ba', 7400, true]
    ])
  ]
}

// Two BYEs crossing (each end hangs up at once) were told apart by $set,
// the last applied: the caller's BYE 5 ms after the callee's, processed
// after it, said the caller hung up, and a redelivered one could flip it.
test('two BYEs crossing: who hung up is whoever sent the first, whatever order they are stored in', async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep, [], { instances: 1 })
  const alice = '<sip:alice@a.example.com>;tag=a1'
  const bob = '<sip:+4930123@b.example.com>;tag=b1'
  const packets = []
  for (const [callId, order] of [['glare-1@x', ['callee', 'caller']], ['glare-2@x', ['caller', 'callee']]]) {
    const sip = (line, headers, at, dir) => HEPjs.encapsulate(sipMessage(line, { callId, ...headers }), rcinfo(1, { at, ...(dir === 'ba' ? { src: ['10.0.0.2', 5060], dst: ['10.0.0.1', 5060] } : {}) }))
    packets.push(sip('INVITE sip:+4930123@b.example.com SIP/2.0', { from: alice, to: '<sip:+4930123@b.example.com>', cseq: '1 INVITE' }, T0))
    packets.push(sip('SIP/2.0 200 OK', { from: alice, to: bob, cseq: '1 INVITE' }, T0 + 1000, 'ba'))
    const byes = {
      callee: sip('BYE sip:alice@10.0.0.1 SIP/2.0', { from: bob, to: alice, cseq: '1 BYE' }, T0 + 9000, 'ba'), // the first
      caller: sip('BYE sip:+4930123@10.0.0.2 SIP/2.0', { from: alice, to: bob, cseq: '2 BYE' }, T0 + 9005)
    }
    for (const who of order) packets.push(byes[who])
  }
  await sendUdp(t, port, packets)
  await waitFor(() => collector.summary().processed === packets.length)
  await collector.stop()
  for (const call of await db.collection('calls').find().toArray()) {
    assert.deepEqual([callOutcome(call).endedBy, +callOutcome(call).endedAt], ['callee', T0 + 9000], call.callId)
  }
})

test('every SIP message stored once in sip_messages; copies from a second agent and a duplicating one counted, not stored or counted twice; calls of every outcome found', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const addresses = (dir) => dir === 'ba' ? { src: ['10.0.0.2', 5060], dst: ['10.0.0.1', 5060] } : { src: ['10.0.0.1', 5060], dst: ['10.0.0.2', 5060] }
  const sent = unansweredCalls()
  const answered = 'answered@a'
  const answeredPackets = callPackets(answered, { reports: 2 })
  // Each packet twice: as the first agent sent it, and as a second agent
  // (another capture id, its clock 30 ms behind) sent the same capture.
  const first = [...sent.map((m) => HEPjs.encapsulate(m.text, rcinfo(1, { at: m.at, ...addresses(m.dir) }))), ...answeredPackets]
  const second = [...sent.map((m) => HEPjs.encapsulate(m.text, { ...rcinfo(1, { at: m.at - 30, ...addresses(m.dir) }), captureId: 8 })), ...answeredPackets]
  await sendUdp(t, port, first)
  await sendUdp(t, port, second)
  const total = first.length + second.length
  await waitFor(() => collector.summary().processed === total)
  const workers = (await collector.stats()).workers.map((w) => w.custom)
  const duplicates = (type) => workers.reduce((n, w) => n + w.duplicates[type], 0)
  assert.deepEqual([duplicates('sip'), duplicates('rtcp')], [sent.length + 5, 4], 'every second copy counted in the workers\' duplicates')
  await collector.stop()
  const s = collector.summary()
  assert.equal(s.dropped.total, 0, JSON.stringify(s.dropped))
  assert.equal(s.processed, total, 'a copy is processed (counted), not dropped')

  const messages = await db.collection('sip_messages').find().sort({ at: 1, _id: 1 }).toArray()
  const answeredSip = 5 // INVITE, 180, 200, ACK, BYE
  assert.equal(messages.length, sent.length + answeredSip, 'each SIP message once, the retransmission too')
  for (const call of ['rejected@a', 'cancelled@a', 'ringing@a']) {
    const mine = messages.filter((m) => m.callId === call)
    const expected = sent.filter((m) => m.callId === call)
    assert.deepEqual(mine.map((m) => m.raw.toString()), expected.map((m) => m.text), `${call}: the raw bytes of each message, in capture order`)
    assert.deepEqual(mine.map((m) => +m.at), expected.map((m) => m.at), 'the first agent\'s capture time: its copy came first')
    assert.deepEqual(mine.map((m) => m.firstLine), expected.map((m) => m.text.split('\r\n')[0]))
    assert.deepEqual(mine.map((m) => `${m.src}>${m.dst}`), expected.map((m) => m.dir === 'ab' ? '10.0.0.1:5060>10.0.0.2:5060' : '10.0.0.2:5060>10.0.0.1:5060'))
    assert.ok(mine.every((m) => m.transport === 'udp' && m.bytes === m.raw.buffer.length && m.captureId === 7))
  }
  const calls = new Map((await db.collection('calls').find().toArray()).map((doc) => [doc.callId, doc]))
  assert.equal(calls.get('rejected@a').duplicates, 5)
  assert.equal(calls.get('cancelled@a').duplicates, 6)
  assert.equal(calls.get(answered).duplicates, answeredSip)
  const stream = await db.collection('streams').findOne({ 'from.callId': answered })
  assert.equal(stream.metadata.packets, 4, 'two reports a side, each counted once')

  const callsOf = await callsCommandOn(db)
  const listed = tableRows(await callsOf('--order', 'time'))
  assert.deepEqual(listed.map((r) => r['CALL-ID']), ['ringing@a', 'cancelled@a', 'rejected@a', answered], 'every SIP call, newest INVITE first')
  // Read an hour after its capture, the call still ringing has been quiet past any INVITE transaction.
  assert.deepEqual(listed.map((r) => r.SIP), ['no final response seen', '487 cancelled', '486 failed', '200, callee hung up'])
  assert.equal(tableRows(await callsOf('--order', 'time', '--final-unseen-after', '2h'))[0].SIP, 'ringing', 'within its bound: ringing')
  assert.deepEqual(listed.map((r) => r.CALLEE), ['+4930777@b.example.com', '+4930666@b.example.com', '+4930555@b.example.com', '+4930123@b.example.com'], 'hosts without the port')
  for (const [outcome, callId] of [['failed', 'rejected@a'], ['cancelled', 'cancelled@a'], ['no-final-seen', 'ringing@a'], ['answered', answered]]) {
    assert.deepEqual(tableRows(await callsOf('--outcome', outcome)).map((r) => r['CALL-ID']), [callId], `--outcome ${outcome}`)
  }
  assert.deepEqual(tableRows(await callsOf('--outcome', 'no-answer')).map((r) => r['CALL-ID']), [], '--outcome no-answer: none is still ringing')
  assert.deepEqual(tableRows(await callsOf('--outcome', 'no-answer', '--final-unseen-after', '2h')).map((r) => r['CALL-ID']), ['ringing@a'])
  assert.deepEqual(tableRows(await callsOf('--number', '30555')).map((r) => r['CALL-ID']), ['rejected@a'], 'by the digits the number ends with')
  const iso = (ms) => new Date(ms).toISOString()
  assert.deepEqual(tableRows(await callsOf('--from', iso(T0 + 5000), '--to', iso(T0 + 8000), '--order', 'time')).map((r) => r['CALL-ID']), ['ringing@a', 'cancelled@a', answered], 'the calls active in the range: the answered one spans it, the rejected one ended before')
  assert.deepEqual(tableRows(await callsOf('--number', '0049 30 666')).map((r) => r['CALL-ID']), ['cancelled@a'], 'dialled with 00: leading zeros are a prefix')
  assert.deepEqual(tableRows(await callsOf('--number', '4930 667')).map((r) => r['CALL-ID']), [], 'digits that are not a suffix find none')

  // One call: its ladder in the terminal, its messages in --json.
  const one = await callsOf('--call-id', 'cancelled@a')
  const ladder = one.slice(one.indexOf('SIP messages of cancelled@a (6 stored)')).split('\n').slice(2, 8)
  assert.deepEqual(ladder.map((line) => line.trim().split(/\s{2,}/)), sent.filter((m) => m.callId === 'cancelled@a').map((m) => [
    `+${((m.at - T0 - 2000) / 1000).toFixed(3)}s`, m.dir === 'ab' ? '10.0.0.1:5060' : '10.0.0.2:5060', '->', m.dir === 'ab' ? '10.0.0.2:5060' : '10.0.0.1:5060', m.text.split('\r\n')[0]
  ]))
  const [line] = (await callsOf('--call-id', 'cancelled@a', '--json')).trim().split('\n').map((text) => JSON.parse(text))
  assert.deepEqual([line.sip.outcome, line.sip.status, line.sip.ringingMs, line.sip.durationMs, line.sip.duplicates], ['cancelled', 487, 300, null, 6])
  assert.deepEqual(line.messages.map((m) => m.raw), sent.filter((m) => m.callId === 'cancelled@a').map((m) => m.text))
})

/**
 * The HEP packets of a call whose end the agents never sent: INVITE, 180
 * and, unless `ringing`, 200 and ACK, its SIP captured at `at` (ms), and
 * with `mediaAt` a receiver report from each side then.
 */
function unendedCall (callId, { at, ringing = false, mediaAt = null, ssrc = 500 }) {
  const alice = '<sip:alice@a.example.com>;tag=a1'
  const bob = '<sip:+4930888@b.example.com>'
  const back = { src: ['10.0.0.2', 5060], dst: ['10.0.0.1', 5060] }
  const sip = (line, to, cseq, when, dir = {}) => HEPjs.encapsulate(sipMessage(line, { callId, from: alice, to, cseq }), rcinfo(1, { at: when, ...dir }))
  const packets = [sip('INVITE sip:+4930888@b.example.com SIP/2.0', bob, '1 INVITE', at - 3000), sip('SIP/2.0 180 Ringing', `${bob};tag=b1`, '1 INVITE', at - 2000, back)]
  if (!ringing) packets.push(sip('SIP/2.0 200 OK', `${bob};tag=b1`, '1 INVITE', at - 10, back), sip('ACK sip:+4930888@b.example.com SIP/2.0', `${bob};tag=b1`, '1 ACK', at))
  if (mediaAt !== null) {
    const block = (source) => ({ source_ssrc: source, highest_seq_no: 1200, fraction_lost: 0, ia_jitter: 40, packets_lost: 0, lsr: 0, dlsr: 0 })
    const rtcp = (from, to, src, dst) => HEPjs.encapsulate(JSON.stringify({ ssrc: from, type: 201, report_count: 1, report_blocks: [block(to)] }), rcinfo(5, { at: mediaAt, correlation: callId, src, dst }))
    packets.push(rtcp(ssrc, ssrc + 1, ['10.0.0.1', 30001], ['10.0.0.2', 40001]), rtcp(ssrc + 1, ssrc, ['10.0.0.2', 40001], ['10.0.0.1', 30001]))
  }
  return packets
}

// A call whose BYE or final response was never captured read "ringing" or
// open forever; the reader now says so once it has been quiet past a bound.
test('collector calls: a call whose BYE never came reads "no BYE seen" once its SIP and media are quiet past --bye-unseen-after, one with no final response "no final response seen" past --final-unseen-after; live ones as before', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const now = Date.now()
  const quietAt = now - 120000 // two minutes before: past the bounds of 30 s below
  const packets = [
    ...unendedCall('dead@a', { at: quietAt }),
    ...unendedCall('live@a', { at: now }),
    ...unendedCall('talking@a', { at: quietAt, mediaAt: now }), // its SIP quiet, its media reporting
    ...unendedCall('lost-ring@a', { at: quietAt, ringing: true }),
    ...unendedCall('ringing-now@a', { at: now, ringing: true })
  ]
  await sendUdp(t, port, packets)
  await waitFor(() => collector.summary().processed === packets.length)
  await collector.stop()

  const callsOf = await callsCommandOn(db)
  const bounds = ['--bye-unseen-after', '30s', '--final-unseen-after', '30s']
  const rows = new Map(tableRows(await callsOf(...bounds)).map((r) => [r['CALL-ID'], r]))
  const sip = Object.fromEntries([...rows].map(([id, r]) => [id, r.SIP]))
  assert.deepEqual(sip, { 'dead@a': '200, no BYE seen', 'live@a': '200', 'talking@a': '200', 'lost-ring@a': 'no final response seen', 'ringing-now@a': 'ringing' })
  assert.equal(rows.get('dead@a').DURATION, '≥0.0s', 'no duration invented: at least answer (10 ms before the ACK) to its last message')
  assert.deepEqual([rows.get('live@a').DURATION, rows.get('talking@a').DURATION], ['open', 'open'])
  // The same calls under the default bounds (4 min, 1 h): all live.
  assert.deepEqual(tableRows(await callsOf()).map((r) => r.SIP).sort(), ['200', '200', '200', 'ringing', 'ringing'])

  const idsOf = async (...argv) => tableRows(await callsOf(...bounds, ...argv)).map((r) => r['CALL-ID']).sort()
  assert.deepEqual(await idsOf('--outcome', 'no-bye-seen'), ['dead@a'])
  assert.deepEqual(await idsOf('--outcome', 'answered'), ['dead@a', 'live@a', 'talking@a'], 'a call with no BYE seen was answered all the same')
  assert.deepEqual(await idsOf('--outcome', 'no-final-seen'), ['lost-ring@a'])
  assert.deepEqual(await idsOf('--outcome', 'no-answer'), ['ringing-now@a'], 'no answer yet: the live ones only')
  const footer = (await callsOf(...bounds)).trim().split('\n').pop()
  assert.match(footer, /SIP calls 5: answered 3 \(no-bye-seen 1\), failed 0, cancelled 0, no-answer 1, no-final-seen 1/)

  const lines = new Map((await callsOf(...bounds, '--json')).trim().split('\n').map((text) => JSON.parse(text)).map((l) => [l.callId, l.sip]))
  const dead = lines.get('dead@a')
  assert.deepEqual([dead.outcome, dead.endUnseen, dead.durationMs, dead.minDurationMs, dead.lastActivityAt], ['answered', true, null, 10, new Date(quietAt).toISOString()])
  assert.ok(dead.quietMs >= 120000, `quiet since its ACK: ${dead.quietMs}`)
  assert.deepEqual([lines.get('talking@a').endUnseen, lines.get('talking@a').lastActivityAt], [false, new Date(now).toISOString()], 'its media\'s last report is its last activity')
  assert.deepEqual([lines.get('lost-ring@a').outcome, lines.get('lost-ring@a').ringing, lines.get('lost-ring@a').endUnseen], ['no-final-seen', false, true])
})

test('--hep-messages-per-call caps what one call stores, the rest counted in overCap; sip_messages is a retention target', async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep, ['--hep-messages-per-call', '3', '--retention-for', 'sip_messages=30d'])
  const callId = 'capped@a.example.com'
  const packets = callPackets(callId).filter((_, i) => i !== 4 && i !== 5) // its 5 SIP messages, no RTCP
  await sendUdp(t, port, packets)
  await waitFor(() => collector.summary().processed === packets.length)
  const overCap = (await collector.stats()).workers.reduce((n, w) => n + w.custom.overCap, 0)
  await collector.stop()
  const messages = await db.collection('sip_messages').find().sort({ at: 1 }).toArray()
  assert.deepEqual(messages.map((m) => m.firstLine), ['INVITE sip:+4930123@b.example.com SIP/2.0', 'SIP/2.0 180 Ringing', 'SIP/2.0 200 OK'], 'the first three')
  const [call] = await db.collection('calls').find().toArray()
  assert.equal(call.overCap, 2)
  assert.equal(overCap, 2, 'and in the workers\' overCap')
  assertCall(call, callId) // the call itself is whole: the cap is on messages stored, not on what the call learns
  const { uri } = await getTestMongo()
  let out = ''
  await callsCommand.run(['--call-id', callId, '--database', db.databaseName], { env: { MONGODB_URI: uri }, out: { write: (text) => { out += text } }, err: { write: () => {} } })
  assert.match(out, /200, callee hung up; 2 past the cap/, 'the table row says what the cap left out')
})

test('log lines (HEP type 100) and vq-rtcpxr reports (type 35) are stored with the call they name, shown with its ladder; one naming no call is refused', async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const callId = 'logged@a.example.com'
  const log = (text, at, correlation) => HEPjs.encapsulate(text, { ...rcinfo(100, { at, correlation }), hepNodeName: 'kamailio-1' })
  const report = ['VQSessionReport: CallTerm', `CallID: ${callId}`, 'LocalID: <sip:alice@a.example.com>', 'QualityEst:MOSLQ=4.1 MOSCQ=4.0', ''].join('\r\n')
  const packets = [
    ...callPackets(callId).filter((_, i) => i !== 4 && i !== 5),
    log('INFO: <script> dispatching to gw2', T0 + 100, callId),
    log('INFO: <script> dispatching to gw2', T0 + 100, callId), // a copy
    log('INFO: <script> dispatching to gw2', T0 + 150, callId), // the same line logged again: no copy
    HEPjs.encapsulate(report, rcinfo(35, { at: T0 + 26000 })), // the call named by the report's CallID line
    log('a log line of no call', T0 + 200)
  ]
  await sendUdp(t, port, packets)
  await waitFor(() => { const s = collector.summary(); return s.processed + s.dropped.total === packets.length })
  await collector.stop()
  const s = collector.summary()
  assert.deepEqual([s.dropped.total, s.dropped['hep-no-call']], [1, 1], JSON.stringify(s.dropped))
  const logs = await db.collection('call_logs').find().sort({ at: 1 }).toArray()
  assert.deepEqual(logs.map((l) => [l.callId, l.kind, +l.at, l.text, l.node]), [
    [callId, 'log', T0 + 100, 'INFO: <script> dispatching to gw2', 'kamailio-1'],
    [callId, 'log', T0 + 150, 'INFO: <script> dispatching to gw2', 'kamailio-1'],
    [callId, 'vq-rtcpxr', T0 + 26000, report, 'test-agent']
  ], 'each once, with its call')
  const { uri } = await getTestMongo()
  let out = ''
  await callsCommand.run(['--call-id', callId, '--database', db.databaseName], { env: { MONGODB_URI: uri }, out: { write: (text) => { out += text } }, err: { write: () => {} } })
  assert.match(out, /What agents logged or reported of logged@a\.example\.com \(3\):/)
  assert.match(out, /log\s+kamailio-1\s+INFO: <script> dispatching to gw2/)
  assert.match(out, /vq-rtcpxr\s+test-agent\s+VQSessionReport: CallTerm\\r\\nCallID:/, 'a report\'s line ends escaped for the terminal')
})

test('legs a B2BUA bridges (an X-CID header, or the HEP correlation id) are shown as one conversation: its legs and their messages in capture order', async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const alice = '<sip:alice@a.example.com>;tag=a1'
  const bob = '<sip:bob@b.example.com>'
  const leg = (callId, at, extra = [], correlation) => HEPjs.encapsulate(sipMessage('INVITE sip:bob@b.example.com SIP/2.0', { callId, from: alice, to: bob, cseq: '1 INVITE' }).replace('Content-Length: 0', [...extra, 'Content-Length: 0'].join('\r\n')), rcinfo(1, { at, correlation }))
  const packets = [
    leg('leg-a@pbx', T0),
    leg('leg-b@pbx', T0 + 20, ['X-CID: leg-a@pbx']),
    leg('leg-c@pbx', T0 + 40, [], 'leg-a@pbx'),
    leg('alone@pbx', T0 + 60)
  ]
  await sendUdp(t, port, packets)
  await waitFor(() => collector.summary().processed === packets.length)
  await collector.stop()
  const linked = Object.fromEntries((await db.collection('calls').find().toArray()).map((doc) => [doc.callId, doc.linkedId || null]))
  assert.deepEqual(linked, { 'leg-a@pbx': null, 'leg-b@pbx': 'leg-a@pbx', 'leg-c@pbx': 'leg-a@pbx', 'alone@pbx': null })
  const { uri } = await getTestMongo()
  const callsOf = async (...argv) => {
    let out = ''
    await callsCommand.run([...argv, ...(argv.includes('--call-id') ? [] : ['--since', '1d']), '--database', db.databaseName], { env: { MONGODB_URI: uri }, out: { write: (text) => { out += text } }, err: { write: () => {} } })
    return out
  }
  for (const callId of ['leg-a@pbx', 'leg-b@pbx', 'leg-c@pbx']) {
    const [line] = (await callsOf('--call-id', callId, '--json')).trim().split('\n').map((text) => JSON.parse(text))
    assert.deepEqual(line.legs, ['leg-a@pbx', 'leg-b@pbx', 'leg-c@pbx'], `${callId}: one conversation, whichever leg is asked for`)
    assert.deepEqual(line.messages.map((m) => m.leg), ['leg-a@pbx', 'leg-b@pbx', 'leg-c@pbx'], 'their messages in capture order')
  }
  const [alone] = (await callsOf('--call-id', 'alone@pbx', '--json')).trim().split('\n').map((text) => JSON.parse(text))
  assert.deepEqual(alone.legs, ['alone@pbx'])
  assert.match(await callsOf('--call-id', 'leg-b@pbx'), /SIP messages of its conversation, 3 legs \(LEG: 1 leg-a@pbx, 2 leg-b@pbx, 3 leg-c@pbx\)/)
  // The view's exports carry the conversation its page draws, not the one leg asked for (QA).
  const collections = { calls: 'calls', streams: 'streams', messages: 'sip_messages', logs: 'call_logs' }
  const text = await sipView.callText(db, 'leg-b@pbx', { collections })
  assert.deepEqual([...text.matchAll(/^Call-ID: (\S+)/gm)].map((m) => m[1]), ['leg-a@pbx', 'leg-b@pbx', 'leg-c@pbx'])
  const pcap = await sipView.callPcap(db, 'leg-c@pbx', { collections })
  assert.equal(['leg-a@pbx', 'leg-b@pbx', 'leg-c@pbx'].filter((id) => pcap.includes(`Call-ID: ${id}`)).length, 3)
})

test('a SIP BYE ends its call\'s streams: the sweeper closes them as ended by bye, not timeout', async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep, ['--bye-grace', '0', '--stream-timeout', '1d'])
  const callId = 'bye@a.example.com'
  const packets = callPackets(callId, { reports: 2 })
  await sendUdp(t, port, packets)
  await waitFor(() => collector.summary().processed === packets.length)
  const stream = await waitFor(() => db.collection('streams').findOne({ 'from.callId': callId, active: false }), { what: 'the stream closed by the sweeper' })
  assert.equal(stream.endReason, 'bye', 'the SIP BYE, not a quiet timeout (RTCP sent none)')
  assert.equal(+stream.endedAt, T0 + 30000, 'at the BYE\'s capture time')
})

/**
 * A forked INVITE (RFC 3261 §13.2.2.4): the proxy forks it to two phones of
 * the callee, both ring and answer (To tags soft.1 and desk.2), the caller
 * keeps the first answer, ACKs both and BYEs the desk phone's dialog at
 * once; the conversation goes on (RTCP from both ends, bound to the call)
 * and the caller hangs up 10 s after the answer. `{ early, late }`: the
 * packets up to its last RTCP report, and the caller's final BYE.
 */
function forkedCallPackets (callId) {
  const alice = '<sip:alice@a.example.com>;tag=a1'
  const bob = '<sip:+4930123@b.example.com>'
  const soft = `${bob};tag=soft.1`
  const desk = `${bob};tag=desk.2`
  const from = { soft: ['10.0.0.2', 5060], desk: ['10.0.0.3', 5060] }
  const sip = (line, f, to, cseq, at, phone) => HEPjs.encapsulate(sipMessage(line, { callId, from: f, to, cseq }),
    rcinfo(1, { at, ...(phone ? { src: from[phone], dst: ['10.0.0.1', 5060] } : { dst: ['10.0.0.9', 5060] }) }))
  const rtcp = (ssrc, source, seq, at, src, dst) => HEPjs.encapsulate(JSON.stringify({ ssrc, type: 201, report_count: 1, report_blocks: [{ source_ssrc: source, highest_seq_no: seq, fraction_lost: 0, ia_jitter: 40, packets_lost: 0, lsr: 0, dlsr: 0 }] }),
    rcinfo(5, { at, correlation: callId, src, dst }))
  const media = (at, seq) => [rtcp(111, 112, seq, at, ['10.0.0.1', 30001], ['10.0.0.2', 40001]), rtcp(112, 111, seq, at + 100, ['10.0.0.2', 40001], ['10.0.0.1', 30001])]
  const early = [
    sip('INVITE sip:+4930123@b.example.com SIP/2.0', alice, bob, '1 INVITE', T0),
    sip('SIP/2.0 180 Ringing', alice, soft, '1 INVITE', T0 + 400, 'soft'),
    sip('SIP/2.0 180 Ringing', alice, desk, '1 INVITE', T0 + 450, 'desk'),
    sip('SIP/2.0 200 OK', alice, soft, '1 INVITE', T0 + 2000, 'soft'),
    sip('ACK sip:+4930123@10.0.0.2 SIP/2.0', alice, soft, '1 ACK', T0 + 2010),
    ...media(T0 + 2500, 1000), // the conversation's media: its first reports
    sip('SIP/2.0 200 OK', alice, desk, '1 INVITE', T0 + 2700, 'desk'),
    sip('ACK sip:+4930123@10.0.0.3 SIP/2.0', alice, desk, '1 ACK', T0 + 2710),
    sip('BYE sip:+4930123@10.0.0.3 SIP/2.0', alice, desk, '2 BYE', T0 + 2720), // the desk phone's dialog, dropped at once
    ...media(T0 + 7500, 1250)
  ]
  return { early, late: [sip('BYE sip:+4930123@10.0.0.2 SIP/2.0', alice, soft, '2 BYE', T0 + 12000)] }
}

// A forked call: the caller's BYE of the second answer (a dialog it drops
// at once) ended the call and its streams: "caller hung up" after 0.7 s,
// while the conversation went on in the first dialog for 10 s.
test('a forked INVITE answered twice: the call is the first answer\'s dialog, and the BYE dropping the second neither ends it nor its streams', async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep, ['--bye-grace', '0', '--stream-timeout', '1d'])
  const callId = 'forked@a.example.com'
  const { early, late } = forkedCallPackets(callId)
  await sendUdp(t, port, early)
  await waitFor(() => collector.summary().processed === early.length)
  await new Promise((resolve) => setTimeout(resolve, 1500)) // a sweep (every second): a stream a BYE ended would close
  const open = await db.collection('streams').find({ 'from.callId': callId }).toArray()
  assert.equal(open.length, 1, 'one stream, the conversation\'s')
  assert.deepEqual([open[0].active, open[0].stream_ended, open[0].endedAt], [true, { from: false, to: false }, undefined], 'the early BYE ended no stream')
  const during = callOutcome(await db.collection('calls').findOne({ callId }))
  assert.deepEqual([during.answered, during.endedAt, during.endedBy, during.otherDialogByes], [true, null, null, 1], 'answered, still going on; the dropped dialog\'s BYE counted')
  await sendUdp(t, port, late)
  const closed = await waitFor(() => db.collection('streams').findOne({ 'from.callId': callId, active: false }), { what: 'the stream closed after the call\'s BYE' })
  assert.deepEqual([closed.endReason, +closed.endedAt], ['bye', T0 + 12000], 'ended by the conversation\'s BYE, at its capture time')
  await collector.stop()
  const call = callOutcome(await db.collection('calls').findOne({ callId }))
  assert.deepEqual([call.outcome, call.status, +call.answeredAt, +call.endedAt, call.durationMs, call.endedBy], ['answered', 200, T0 + 2000, T0 + 12000, 10000, 'caller'])
  const row = tableRows(await (await callsCommandOn(db))('--call-id', callId))[0]
  assert.deepEqual([row.SIP, row.DURATION], ['200, caller hung up', '10.0s'], 'collector calls')
})

test('TCP: packets framed by their own length, split anywhere, arrive whole', async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep, ['--protocol', 'tcp_server'])
  const callId = 'call-tcp@a.example.com'
  const packets = callPackets(callId)
  const bytes = Buffer.concat(packets)
  const socket = net.connect({ host: HOST, port })
  t.after(() => socket.destroy())
  await once(socket, 'connect')
  for (let at = 0; at < bytes.length; at += 37) socket.write(bytes.subarray(at, at + 37))
  await waitFor(() => collector.summary().processed === packets.length)
  await collector.stop()
  const [call] = await db.collection('calls').find().toArray()
  assertCall(call, callId)
})

test('TLS: the same packets over a TLS connection (the usual --tls-cert/--tls-key), framed by their length', async (t) => {
  const certs = makeTlsFixtures()
  t.after(() => certs.cleanup())
  const { collector, db, port } = await startTestCollector(t, hep, ['--protocol', 'tcp_server', '--tls-cert', certs.server.cert, '--tls-key', certs.server.key])
  const callId = 'call-tls@a.example.com'
  const packets = callPackets(callId)
  const socket = tls.connect({ host: HOST, port, ca: fs.readFileSync(certs.ca.cert), servername: 'localhost' })
  t.after(() => socket.destroy())
  await once(socket, 'secureConnect')
  socket.end(Buffer.concat(packets))
  await waitFor(() => collector.summary().processed === packets.length)
  await collector.stop()
  const [call] = await db.collection('calls').find().toArray()
  assertCall(call, callId)
})

test('refusals by reason: wrong or missing auth key, keepalives, other protocol types, broken packets', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hep-key-'))
  t.after(() => removeDir(dir))
  const keyFile = path.join(dir, 'key')
  fs.writeFileSync(keyFile, 'right-key\n')
  const { collector, db, port } = await startTestCollector(t, hep, ['-i', '1', '--hep-password-file', keyFile])
  const good = callPackets('c-auth@x', { password: 'right-key' })
  const wrong = callPackets('c-wrong@x', { password: 'wrong-key' }).slice(0, 2)
  const none = callPackets('c-none@x').slice(0, 1)
  const rtp = HEPjs.encapsulate('rtp bytes', rcinfo(4, { at: T0, password: 'right-key' }))
  const broken = Buffer.from(good[0]).subarray(0, 20)
  const ping = HEPjs.encapsulate('ping', rcinfo(0, { at: T0, password: 'right-key' }))
  // An unkeyed gzip bomb is an auth failure, not a gzip one (nothing is inflated before the key);
  // 400 report blocks (what still inflates within 65,535 bytes) with the key are refused by the
  // protocol's bound, not stored as 400 streams.
  const bomb = gzipped(1, zlib.gzipSync(Buffer.alloc(4 * 1024 * 1024)))
  const blocks = Array.from({ length: 400 }, (_, i) => ({ source_ssrc: i, highest_seq_no: 1, fraction_lost: 0, ia_jitter: 0, packets_lost: 0, lsr: 0, dlsr: 0 }))
  const fanOut = gzipped(5, zlib.gzipSync(JSON.stringify({ ssrc: 1, report_blocks: blocks })), 'right-key')
  await sendUdp(t, port, [...good, ...wrong, ...none, rtp, broken, ping, bomb, fanOut])
  const sent = good.length + wrong.length + none.length + 5
  await waitFor(() => collector.summary().received === sent && collector.summary().inFlight === 0)
  const s = collector.summary()
  assert.equal(s.processed, good.length)
  assert.equal(s.dropped['hep-auth'], 4)
  assert.equal(s.dropped['too-many-sources'], 1)
  assert.equal(s.dropped['hep-bad-gzip'], undefined)
  assert.equal(s.dropped['hep-type-4'], 1)
  assert.equal(s.dropped['hep-bad-length'], 1)
  assert.equal(s.dropped['hep-keepalive'], 1, 'a ping is counted, not stored')
  assert.equal(s.received, s.processed + s.failed + s.dropped.total)
  await collector.stop()
  assert.deepEqual((await db.collection('calls').find().toArray()).map((c) => c.callId), ['c-auth@x'])
  assert.ok(await db.collection('streams').countDocuments() <= 2, 'the good call\'s stream, none of the 400 blocks')
})

test('a correlation id whose bytes are not UTF-8 is refused (hep-correlation-id): bad\\xff@x and bad\\xfe@x had become one call bad\\ufffd@x (QA)', async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  // hep-js writes the id as text: the byte Z (0x5a) of each id is then made 0xff or 0xfe.
  const withByte = (packet, byte) => {
    const at = packet.indexOf('badZ@x')
    assert.ok(at > 0)
    packet[at + 3] = byte
    return packet
  }
  const report = (ssrc, correlation) => HEPjs.encapsulate(JSON.stringify({ ssrc, type: 201, report_count: 1, report_blocks: [{ source_ssrc: ssrc + 1, highest_seq_no: 100, fraction_lost: 0, ia_jitter: 40, packets_lost: 0, lsr: 0, dlsr: 0 }] }),
    rcinfo(5, { at: T0, correlation, src: ['10.0.0.1', 30000 + ssrc], dst: ['10.0.0.2', 40000 + ssrc] }))
  const log = (correlation) => HEPjs.encapsulate('call routed to trunk 7', rcinfo(100, { at: T0, correlation }))
  const packets = [withByte(report(1, 'badZ@x'), 0xff), withByte(report(3, 'badZ@x'), 0xfe), withByte(log('badZ@x'), 0xff), report(5, 'good@x'), log('good@x')]
  await sendUdp(t, port, packets)
  await waitFor(() => collector.summary().received === packets.length && collector.summary().inFlight === 0)
  await collector.stop()
  const s = collector.summary()
  assert.equal(s.dropped['hep-correlation-id'], 3)
  assert.equal(s.processed, 2, 'a good id is kept')
  assert.equal(s.received, s.processed + s.failed + s.dropped.total)
  const named = (await db.collection('streams').find().toArray()).flatMap((doc) => [doc.from && doc.from.callId, doc.to && doc.to.callId]).filter(Boolean)
  assert.deepEqual([...new Set(named)], ['good@x'])
  assert.deepEqual((await db.collection('call_logs').find().toArray()).map((l) => l.callId), ['good@x'])
})

test('workers SIGKILLed every 700 ms under 300 interleaved calls: one call document and one stream per call, every field exact', { timeout: 120000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const calls = 300
  const reports = 4
  const perCall = Array.from({ length: calls }, (_, c) => callPackets(`kill-${c}@a.example.com`, { reports, ssrc: 10000 + 2 * c }))
  // Interleaved: round-robin over the calls, each call's packets in order.
  const packets = []
  for (let k = 0; k < perCall[0].length; k++) for (const call of perCall) packets.push(call[k])
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const kills = killLoop(collector, 700)
  for (let i = 0; i < packets.length; i++) {
    await new Promise((resolve, reject) => socket.send(packets[i], port, HOST, (err) => err ? reject(err) : resolve()))
    if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 15))
  }
  const killed = await kills.stop(3)
  await waitFor(() => { const s = collector.summary(); return s.received === packets.length && accountedFor(s) }, { timeout: 60000 })
  await collector.stop()
  const s = collector.summary()
  assert.ok(killed >= 3, `workers were killed (${killed})`)
  assert.equal(s.dropped.total, 0, JSON.stringify(s.dropped))
  assert.equal(s.processed, packets.length)
  const docs = await db.collection('calls').find().toArray()
  assert.equal(docs.length, calls, 'one document per call')
  for (const doc of docs) {
    assertCall(doc, doc.callId, T0 + 25000 + 5000 * (reports - 1))
  }
  const messages = await db.collection('sip_messages').find({}, { projection: { raw: 0 } }).toArray()
  assert.equal(messages.length, calls * 5, 'each SIP message stored once')
  assert.equal(new Set(messages.map((m) => `${m.callId} ${+m.at} ${m.firstLine}`)).size, messages.length, 'none twice')
  const streams = await db.collection('streams').find({ openKey: { $exists: true } }).toArray()
  assert.equal(streams.length, calls, 'one stream per call')
  const wrong = streams.filter((d) => d.from.callId !== d.to.callId || d.metadata.packets !== 2 * reports ||
    Math.max(d.from.highestPacketNum, d.to.highestPacketNum) !== 1200 + 50 * (reports - 1))
  assert.deepEqual(wrong.slice(0, 2), [], `${wrong.length} streams differ from what was sent`)
})

test('an auth key file that cannot be read or is empty is refused by the config and at construction, naming it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hep-key-'))
  try {
    const empty = path.join(dir, 'empty')
    fs.writeFileSync(empty, '\n')
    for (const [file, why] of [[path.join(dir, 'missing'), 'cannot be read \\(ENOENT\\)'], [empty, 'is empty']]) {
      assert.throws(() => new hep.Config(['--port', '0', '--hep-password-file', file]).getConfig(), { code: 'ERR_INVALID_CONFIG', message: new RegExp(`--hep-password-file: ${why}`) })
      assert.throws(() => new hep.Collector({ port: 0, hepPasswordFile: file }), { code: 'ERR_INVALID_OPTION', message: new RegExp(`"hepPasswordFile" ${why}`) })
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('a MongoDB collector\'s in-flight bound follows its workers\' pending bound (never above it)', () => {
  const of = (argv) => new hep.Collector(new hep.Config(['--port', '0', ...argv]).getConfig()).options.maxInFlight
  assert.equal(of(['--max-pending', '5000']), 5000)
  assert.equal(of(['--max-pending', '5000', '--max-in-flight', '2000']), 2000)
  assert.equal(of([]), 100000)
})

test('a 60 ms PCMA call whose SDP says a=ptime:60: its 10 s windows are 167 packets and its packetization delay 60 ms, from the SDP; the worst window is the E-model\'s at the loss its packets carry', async (t) => {
  const { oracleRatings } = require('../helpers/emodel-oracle')
  const { sideQuality } = require('../../collectors/rtcp/quality-analytics')
  const { JITTER_BUFFER_MS } = require('../../collectors/rtcp/constants')
  const { collector, db, port } = await startTestCollector(t, hep)
  const callId = 'ptime-60@a.example.com'
  const sdp = (ip, rtpPort) => ['v=0', `o=- 1 1 IN IP4 ${ip}`, 's=-', `c=IN IP4 ${ip}`, 't=0 0', `m=audio ${rtpPort} RTP/AVP 8 101`, 'a=rtpmap:8 PCMA/8000', 'a=rtpmap:101 telephone-event/8000', 'a=ptime:60', ''].join('\r\n')
  const withBody = (line, cseq, body, at, dir) => {
    const text = [line, 'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1', 'From: <sip:alice@a.example.com>;tag=a1', `To: <sip:bob@b.example.com>${dir === 'ba' ? ';tag=b1' : ''}`, `Call-ID: ${callId}`, `CSeq: ${cseq}`, 'Content-Type: application/sdp', `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n')
    return HEPjs.encapsulate(text, rcinfo(1, { at, ...(dir === 'ba' ? { src: ['10.0.0.2', 5060], dst: ['10.0.0.1', 5060] } : {}) }))
  }
  await sendUdp(t, port, [withBody('INVITE sip:bob@b.example.com SIP/2.0', '1 INVITE', sdp('10.0.0.1', 30000), T0, 'ab'), withBody('SIP/2.0 200 OK', '1 INVITE', sdp('10.0.0.2', 40000), T0 + 1000, 'ba')])
  await waitFor(() => collector.summary().processed === 2, { what: 'the call\'s SIP processed' })
  // B's receiver reports about A every 4.8 s (80 packets of 60 ms); 33 packets lost between the 6th and 7th,
  // whose sequence numbers (1503–1582) lie in one window of 10 s of 60 ms packets (167: 1503–1669).
  const firstSeq = 1102
  const reports = []
  let lost = 0
  for (let r = 0; r <= 12; r++) {
    if (r === 6) lost += 33
    const block = { source_ssrc: 111, highest_seq_no: firstSeq + 80 * r, fraction_lost: 0, ia_jitter: 40, packets_lost: lost, lsr: 0, dlsr: 0 }
    reports.push(HEPjs.encapsulate(JSON.stringify({ ssrc: 112, type: 201, report_count: 1, report_blocks: [block] }), rcinfo(5, { at: T0 + 5000 + 4800 * r, correlation: callId, src: ['10.0.0.2', 40001], dst: ['10.0.0.1', 30001] })))
  }
  await sendUdp(t, port, reports)
  await waitFor(() => collector.summary().processed === 2 + reports.length, { what: 'the RTCP processed' })
  await collector.stop()
  const [stream] = await db.collection('streams').find({ openKey: { $exists: true } }).toArray()
  const side = sideQuality(stream.from.ID === '112' ? stream.from : stream.to)
  // The truth from the packets: 10 s of 60 ms packets are 167 (10000 / 60, rounded); the lost ones all in window 9.
  const span = Math.round(10000 / 60)
  assert.equal(Math.floor((firstSeq + 401) / span), Math.floor((firstSeq + 433) / span), 'the outage in one window')
  assert.deepEqual([side.packetMs, side.packetSource, side.clockRateSource, side.format], [60, 'sdp', 'sdp', 'PCMA/8000'])
  const w = side.worstWindow
  assert.deepEqual([w.span, w.window, w.lost, w.expected, w.packetSource], [span, Math.floor((firstSeq + 401) / span), 33, span, 'sdp'], JSON.stringify(w))
  // No round trip (RRs without LSR): the endpoints' delay, the buffer and one 60 ms packet of G.711.
  const T = JITTER_BUFFER_MS + 60
  assert.deepEqual([w.delayMs, w.delayBasis], [T, 'endpoints'])
  const [oracle] = oracleRatings([{ Ie: 0, Bpl: 25.1, Ppl: 33 / span * 100, T, Ta: T, Tr: 2 * T }])
  assert.ok(Math.abs(w.mos - oracle.MOS) < 1e-9, `window ${w.mos}, the E-model ${oracle.MOS}`)
  assert.ok(w.mos < 3.6, `poor: ${w.mos}`)
})
