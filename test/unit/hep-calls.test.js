'use strict'

// The parts of the hep collector's calls that need no server: the copy
// window (what is a copy, what a retransmission), the per-call ledger, a
// call's outcome class from its document, and the pcap export's frames.

const test = require('node:test')
const assert = require('node:assert/strict')
const { CopyWindow, SideCaptures, CallLedger } = require('../../collectors/hep/call-memory')
const { callOutcome, callUpdateOf } = require('../../collectors/hep/calls')
const { matchesNumber, partyText, durationText, outcomeText, outcomeCounts } = require('../../app/commands/calls-list')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { sipPcap } = require('../../app/commands/sip-pcap')

test('a copy is the same fingerprint captured within the window; a retransmission after it is a message of its own, and a late copy of either is still a copy', () => {
  const copies = new CopyWindow({ windowMs: 200 })
  const now = 1000000
  assert.equal(copies.isCopy('invite', 5000, now), false, 'the first')
  assert.equal(copies.isCopy('invite', 5030, now), true, 'a second agent 30 ms behind')
  assert.equal(copies.isCopy('invite', 5500, now), false, 'sent again after T1: a retransmission')
  assert.equal(copies.isCopy('invite', 4970, now), true, 'a copy of the first, after the retransmission')
  assert.equal(copies.isCopy('invite', 5480, now), true, 'a copy of the retransmission')
  assert.equal(copies.isCopy('bye', 5000, now), false, 'other bytes')
  assert.equal(new CopyWindow({ windowMs: 0 }).isCopy('x', 1, now), false, 'a window of 0: nothing is a copy')
})

test('the copy window forgets by arrival: two generations, rotated on time or when one fills (counted)', () => {
  const copies = new CopyWindow({ windowMs: 200, maxHeld: 4 })
  const now = copies.rotatedAt
  copies.isCopy('a', 1, now)
  copies.isCopy('b', 1, now) // the generation holds 2 = maxHeld / 2: the next rotates it
  assert.equal(copies.isCopy('a', 1, now), true, 'still held, in the previous generation')
  assert.equal(copies.evicted, 0, 'nothing forgotten yet')
  copies.isCopy('c', 1, now)
  copies.isCopy('d', 1, now)
  copies.isCopy('e', 1, now) // rotates again, within the span: a and b forgotten early
  assert.equal(copies.evicted, 2, 'filled before its time: counted')
  assert.equal(copies.isCopy('a', 1, now), false, 'forgotten')
  assert.equal(copies.isCopy('e', 1, now + 1000), true, 'one span later, in the previous generation')
  assert.equal(copies.isCopy('e', 1, now + 2000), false, 'two spans later, gone')
})

// An idle worker rotated once at its next packet, so the generation of
// what arrived before the pause became the previous one and still matched:
// a capture sent again 6 s (or 44 s) later was taken for a copy (QA).
test('the copy window forgets what arrived two spans ago or more, however long the worker was idle', () => {
  const copies = new CopyWindow({ windowMs: 200 })
  const start = copies.rotatedAt
  assert.equal(copies.isCopy('invite', 5000, start), false)
  assert.equal(copies.isCopy('invite', 5000, start + 1500), true, 'a span later: still held (the previous generation)')
  assert.equal(copies.isCopy('bye', 7000, start + 1600), false)
  assert.equal(copies.isCopy('bye', 7000, start + 1600 + 6000), false, 'sent again 6 s later, nothing between: stored again')
  assert.equal(copies.isCopy('invite', 5000, start + 1600 + 6000 + 44000), false, 'and 44 s later')
  assert.equal(copies.evicted, 0, 'forgotten on time, not early')
})

test('a side\'s recent captures: its reports of the last span, at most 16, oldest first; a side silent for two spans is forgotten', () => {
  const sides = new SideCaptures({ span: 1000 })
  const start = sides.rotatedAt
  const keys = (list) => list.map((c) => c.key)
  assert.deepEqual(keys(sides.add('a>b', { key: 'r1' }, start)), ['r1'])
  assert.deepEqual(keys(sides.add('a>b', { key: 'r2' }, start + 100)), ['r1', 'r2'], 'a report 100 ms later: both')
  assert.deepEqual(keys(sides.add('b>a', { key: 'x1' }, start + 150)), ['x1'], 'each side its own')
  assert.deepEqual(keys(sides.add('a>b', { key: 'r3' }, start + 1050)), ['r2', 'r3'], 'r1 arrived over a span before r3')
  assert.deepEqual(keys(sides.add('a>b', { key: 'r4' }, start + 1900)), ['r3', 'r4'], 'held across a rotation')
  for (let i = 5; i <= 25; i++) sides.add('a>b', { key: `r${i}` }, start + 1900 + i)
  assert.deepEqual(keys(sides.add('a>b', { key: 'r26' }, start + 1930)), Array.from({ length: 16 }, (_, i) => `r${i + 11}`), 'at most 16')
  assert.deepEqual(keys(sides.add('c>d', { key: 'y' }, start + 5000)), ['y'])
  assert.equal(sides.size, 1, 'two spans without a report: the other sides forgotten')
})

test('the call ledger caps the messages stored per call and remembers the SSRCs its RTCP named', () => {
  const ledger = new CallLedger({ maxCalls: 2 })
  assert.deepEqual([1, 2, 3].map(() => ledger.admitMessage('c1', 2)), [true, true, false])
  ledger.addSsrc('c1', '111')
  ledger.addSsrc('c1', '112')
  ledger.addSsrc('c1', '111')
  assert.deepEqual(ledger.ssrcsOf('c1'), ['111', '112'])
  ledger.admitMessage('c2', 2)
  ledger.admitMessage('c3', 2) // the least recent, c1, is forgotten
  assert.deepEqual([ledger.ssrcsOf('c1'), ledger.evicted, ledger.size], [[], 1, 2])
})

test('a call\'s outcome class, ringing time and duration come from its SIP document', () => {
  const at = (ms) => new Date(1e12 + ms)
  const base = { callId: 'x', invitedAt: at(0) }
  const of = (doc) => { const o = callOutcome({ ...base, ...doc }); return [o.outcome, o.status, o.ringing, o.ringingMs, o.durationMs] }
  assert.deepEqual(of({ ringingAt: at(400), answeredAt: at(2000), endedAt: at(9000), final: 1200 }), ['answered', 200, false, 400, 7000])
  assert.deepEqual(of({ final: 1486 }), ['failed', 486, false, null, null])
  assert.deepEqual(of({ final: 1302 }), ['failed', 302, false, null, null], 'a redirect ends the call too')
  assert.deepEqual(of({ ringingAt: at(300), cancelledAt: at(5000), final: 1487 }), ['cancelled', 487, false, 300, null])
  assert.deepEqual(of({ ringingAt: at(300), cancelledAt: at(5000) }), ['cancelled', null, false, 300, null], 'cancelled before its 487 came')
  assert.deepEqual(of({ ringingAt: at(300) }), ['no-answer', null, true, 300, null], 'still ringing')
  assert.deepEqual(of({}), ['no-answer', null, false, null, null])
  assert.deepEqual(of({ answeredAt: at(2000), final: 1200 }).slice(0, 1).concat(of({ answeredAt: at(2000), final: 1200 })[4]), ['answered', null], 'no BYE yet: no duration')
  // A re-INVITE refused (CSeq 2, 488) after the answer: the call is still answered by its 200 (QA).
  assert.deepEqual(of({ answeredAt: at(2000), answerStatus: 200, endedAt: at(5000), final: 2488 }).slice(0, 2), ['answered', 200])
})

// A call whose final response or BYE was never captured read "ringing" or
// open forever: the reader tells it from a live one by its quiet at `now`.
test('a call with no final response reads ringing while its SIP is heard, "no final response seen" once quiet past finalUnseenAfter (4 min by default); its media does not count', () => {
  const at = (ms) => new Date(1e12 + ms)
  const call = { callId: 'r', invitedAt: at(0), ringingAt: at(400), lastSeen: at(60000) } // its 180 sent again a minute on
  const read = (now, more = {}) => callOutcome(call, { now: 1e12 + now, ...more })
  const live = read(60000 + 4 * 60000)
  assert.deepEqual([live.outcome, live.ringing, live.endUnseen, live.quietMs, outcomeText(live)], ['no-answer', true, false, 240000, 'ringing'], 'quiet for the bound: still ringing')
  const quiet = read(60000 + 4 * 60000 + 1)
  assert.deepEqual([quiet.outcome, quiet.ringing, quiet.endUnseen, quiet.status, quiet.durationMs, outcomeText(quiet)], ['no-final-seen', false, true, null, null, 'no final response seen'])
  assert.equal(+quiet.lastActivityAt, +at(60000))
  assert.equal(read(60000 + 10001, { finalUnseenAfter: 10000 }).outcome, 'no-final-seen', 'a bound of its own')
  assert.equal(read(60000 + 4 * 60000 + 1, { mediaAt: at(60000 + 4 * 60000) }).outcome, 'no-final-seen', 'early media\'s reports are not SIP: the INVITE transaction is over')
  assert.deepEqual([callOutcome(call).outcome, callOutcome(call).quietMs], ['no-answer', null], 'no time of reading: not judged')
  const rejected = callOutcome({ ...call, final: 1486 }, { now: 1e12 + 86400000 })
  assert.deepEqual([rejected.outcome, rejected.endUnseen, outcomeText(rejected)], ['failed', false, '486 failed'], 'a call with its final response has its end')
})

test('an answered call with no BYE reads open while its SIP or media is heard, "no BYE seen" once both are quiet past byeUnseenAfter (1 h by default), lasting at least answer to last activity', () => {
  const at = (ms) => new Date(1e12 + ms)
  const call = { callId: 'a', invitedAt: at(0), answeredAt: at(2000), answerStatus: 200, final: 1200, lastSeen: at(2010) } // the ACK its last SIP
  const read = (now, more = {}) => callOutcome(call, { now: 1e12 + now, ...more })
  const open = read(2010 + 3600000)
  assert.deepEqual([open.outcome, open.endUnseen, open.durationMs, open.minDurationMs, outcomeText(open)], ['answered', false, null, null, '200'], 'quiet for the bound: in progress')
  const lost = read(2010 + 3600001)
  assert.deepEqual([lost.outcome, lost.endUnseen, lost.durationMs, lost.minDurationMs, outcomeText(lost)], ['answered', true, null, 10, '200, no BYE seen'], 'no duration invented: at least answer to the ACK')
  // Its media reported until 30 minutes in: live for an hour after that.
  const media = { mediaAt: at(1800000) }
  assert.deepEqual([read(2010 + 3600001, media).endUnseen, read(2010 + 3600001, media).quietMs], [false, 3600000 + 2010 - 1800000 + 1])
  const later = read(1800000 + 3600001, media)
  assert.deepEqual([later.endUnseen, later.minDurationMs, +later.lastActivityAt], [true, 1798000, +at(1800000)])
  assert.equal(durationText(later.durationMs, { atLeastMs: later.minDurationMs }), '≥1798.0s')
  assert.equal(read(60001, { byeUnseenAfter: 50000 }).endUnseen, true, 'a bound of its own')
  const ended = callOutcome({ ...call, endedAt: at(9000), firstBye: `${at(9000).toISOString()}|b1`, callerTag: 'a1' }, { now: 1e12 + 86400000 })
  assert.deepEqual([ended.endUnseen, ended.durationMs, ended.minDurationMs, outcomeText(ended)], [false, 7000, null, '200, callee hung up'], 'its BYE seen: its end known')
  const counts = { answered: 3, failed: 1, cancelled: 0, 'no-answer': 0, 'no-final-seen': 2, 'no-bye-seen': 1 }
  assert.equal(outcomeCounts(counts), 'answered 3 (no-bye-seen 1), failed 1, cancelled 0, no-answer 0, no-final-seen 2')
  assert.equal(outcomeCounts({ ...counts, 'no-bye-seen': 0 }), 'answered 3, failed 1, cancelled 0, no-answer 0, no-final-seen 2', 'none among the answered: not said')
})

test('the status an answered call lists is its answer\'s, whatever a later re-INVITE got (callUpdateOf)', () => {
  const sip = (status, seq) => ({ status, callId: 'x', cseq: { seq, method: 'INVITE' }, from: { tag: 'a' }, to: { tag: 'b' } })
  const answer = callUpdateOf(sip(200, 1), 1e12)
  assert.deepEqual([answer.min.answerStatus, answer.max.final], [200, 1200])
  const refused = callUpdateOf(sip(488, 2), 1e12 + 1000)
  assert.deepEqual([refused.min.answerStatus, refused.max.final], [undefined, 2488])
})

// A call whose INVITE was not captured (the agent started mid-call, or lost
// it) was said to be hung up by the callee whoever sent the BYE: the
// caller's tag came from the INVITE alone (QA).
test('who hung up without the INVITE: the caller\'s tag from a provisional response to it, else not guessed (not from a 2xx, which may answer the callee\'s re-INVITE)', () => {
  const sip = (fields) => ({ callId: 'x', from: {}, to: {}, ...fields })
  const reply = (status, seq, from, to) => sip({ status, cseq: { seq, method: 'INVITE' }, from: { tag: from }, to: { tag: to } })
  const bye = (from, to) => sip({ method: 'BYE', cseq: { seq: 9, method: 'BYE' }, from: { tag: from }, to: { tag: to } })
  // What MongoDB does with the updates: $min, $max, $set on dotted paths.
  const stored = (...updates) => {
    const doc = {}
    for (const update of updates) {
      for (const [op, pick] of [['min', (a, b) => b < a], ['max', (a, b) => b > a], ['set', () => true]]) {
        for (const [path, value] of Object.entries(update[op])) {
          const keys = path.split('.')
          let at = doc
          for (const key of keys.slice(0, -1)) at = at[key] ?? (at[key] = {})
          const key = keys.at(-1)
          if (at[key] === undefined || pick(at[key], value)) at[key] = value
        }
      }
    }
    return doc
  }
  const T = 1e12
  const answered = [callUpdateOf(reply(180, 1, 'ft1', 'tt1'), T), callUpdateOf(reply(200, 1, 'ft1', 'tt1'), T + 1000)]
  const byCaller = callOutcome(stored(...answered, callUpdateOf(bye('ft1', 'tt1'), T + 9000)))
  assert.deepEqual([byCaller.endedBy, outcomeText(byCaller)], ['caller', '200, caller hung up'])
  const byCallee = callOutcome(stored(callUpdateOf(bye('tt1', 'ft1'), T + 9000), ...answered))
  assert.deepEqual([byCallee.endedBy, outcomeText(byCallee)], ['callee', '200, callee hung up'], 'in any order')
  const trying = callOutcome(stored(callUpdateOf(reply(100, 1, 'ft1', undefined), T - 100), callUpdateOf(reply(200, 1, 'ft1', 'tt1'), T + 1000), callUpdateOf(bye('ft1', 'tt1'), T + 9000)))
  assert.equal(trying.endedBy, 'caller', 'a 100 without a To tag: of the initial INVITE')
  // Captured from mid-call: the callee's re-INVITE (its tag in From) and its 200, then a BYE: not guessed.
  const reinvite = [callUpdateOf(reply(100, 5, 'tt1', 'ft1'), T + 5000), callUpdateOf(reply(200, 5, 'tt1', 'ft1'), T + 5010)]
  for (const [from, to] of [['ft1', 'tt1'], ['tt1', 'ft1']]) {
    const o = callOutcome(stored(...reinvite, callUpdateOf(bye(from, to), T + 9000)))
    assert.deepEqual([o.endedBy, +o.endedAt, outcomeText(o)], [null, T + 9000, '200, hung up'], `BYE from ${from}`)
  }
  assert.equal(callOutcome(stored(...reinvite, ...answered, callUpdateOf(bye('tt1', 'ft1'), T + 9000))).endedBy, 'callee', 'the initial INVITE\'s 180 says who the caller is')
  // Only the 200 and the BYE (the helper's trial): not guessed either.
  const bare = callOutcome(stored(callUpdateOf(reply(200, 1, 'ft1', 'tt1'), T + 1000), callUpdateOf(bye('ft1', 'tt1'), T + 9000)))
  assert.deepEqual([bare.endedBy, outcomeText(bare)], [null, '200, hung up'])
  // Only a BYE and its 200 (the INVITE's transaction not captured: an agent started mid-call, a master restart lost it):
  // answered, its answer not seen, ended; it read "no answer", then "no final response seen" beside its end (QA).
  const byeOk = sip({ status: 200, cseq: { seq: 9, method: 'BYE' }, from: { tag: 'ft1' }, to: { tag: 'tt1' } })
  const byeOnly = callOutcome(stored(callUpdateOf(bye('ft1', 'tt1'), T + 9000), callUpdateOf(byeOk, T + 9010)), { now: T + 3600e3 })
  assert.deepEqual([byeOnly.outcome, byeOnly.answered, byeOnly.answerUnseen, byeOnly.status, byeOnly.durationMs, byeOnly.endUnseen, +byeOnly.endedAt, +byeOnly.startedAt, outcomeText(byeOnly)],
    ['answered', true, true, null, null, false, T + 9000, T + 9000, 'answer not seen, hung up'])
  const rejected = callOutcome(stored(callUpdateOf(reply(486, 1, 'ft1', 'tt1'), T + 1000), callUpdateOf(bye('ft1', 'tt1'), T + 9000)), { now: T + 3600e3 })
  assert.deepEqual([rejected.outcome, rejected.answerUnseen], ['failed', false], 'a final response says the outcome, whatever BYE follows')
})

test('a number search: by text, or by its digits as a suffix less leading zeros (00 and 0 dialling prefixes); text that is not a number matches only whole (QA)', () => {
  const call = { caller: { user: '+4930999111', host: 'a' }, callee: { user: 'alice', host: 'b' } }
  for (const number of ['+4930999111', '4930999111', '0030999111', '030999111', '999111', '+49 (30) 999-111', 'alice']) assert.ok(matchesNumber(call, number), number)
  for (const number of ['<script>alert(1)</script>', 'x1', '0', '0049', 'ali', '4930999112']) assert.ok(!matchesNumber(call, number), number)
  assert.equal(partyText({ user: '+493010000808', host: '' }), '+493010000808', 'a tel: URI has no host')
  assert.equal(partyText({ user: 'bob', host: 'b.example' }), 'bob@b.example')
  // A replayed capture's call lasts under a millisecond: said so, not 0.0s.
  assert.deepEqual([null, 0.2, 0, 349.6, 999.4, 1000, 22049].map(durationText), ['-', '<1ms', '<1ms', '350ms', '999ms', '1.0s', '22.0s'])
})

test('the pcap export: a frame per message, IPv4 and IPv6, capture times kept to the microsecond field; an address it cannot write is left out', () => {
  const messages = [
    { at: new Date(1795756864123), atMicros: 846, src: '10.0.0.1:5060', dst: '10.0.0.2:5070', raw: Buffer.from('INVITE sip:x SIP/2.0\r\n\r\n') },
    { at: new Date(1795756864456), src: '[2001:db8::1]:5060', dst: '[2001:db8::2]:5060', raw: 'SIP/2.0 200 OK\r\n\r\n' },
    { at: new Date(1795756864999), src: 'nonsense', dst: '10.0.0.2:5060', raw: 'x' }
  ]
  const pcap = sipPcap(messages)
  assert.equal(pcap.readUInt32LE(0), 0xa1b2c3d4)
  let at = 24
  const frames = []
  while (at < pcap.length) {
    const length = pcap.readUInt32LE(at + 8)
    frames.push({ sec: pcap.readUInt32LE(at), usec: pcap.readUInt32LE(at + 4), frame: pcap.subarray(at + 16, at + 16 + length) })
    at += 16 + length
  }
  assert.equal(frames.length, 2)
  assert.deepEqual([frames[0].sec, frames[0].usec], [1795756864, 123846], 'the microseconds past the millisecond (atMicros) kept')
  assert.deepEqual([frames[1].sec, frames[1].usec], [1795756864, 456000])
  const v4 = frames[0].frame
  assert.equal(v4.readUInt16BE(12), 0x0800)
  assert.deepEqual([...v4.subarray(26, 30)], [10, 0, 0, 1])
  assert.equal(v4.readUInt16BE(34 + 2), 5070, 'the UDP destination port')
  assert.equal(v4.subarray(42).toString(), 'INVITE sip:x SIP/2.0\r\n\r\n')
  const v6 = frames[1].frame
  assert.equal(v6.readUInt16BE(12), 0x86dd)
  assert.equal(v6.subarray(14 + 8, 14 + 24).toString('hex'), '20010db8000000000000000000000001')
  assert.equal(v6.subarray(62).toString(), 'SIP/2.0 200 OK\r\n\r\n')
})

// tshark, the oracle: a message stored cut at the store's cap reads as a
// frame cut at the capture's snapshot length, its whole size known.
test('the pcap export: a message stored cut says its whole size, as a capture cut by its snapshot length does (tshark)', () => {
  const raw = Buffer.from('INVITE sip:b@h SIP/2.0\r\nCall-ID: big1\r\nContent-Length: 20000\r\n\r\nv=0')
  const pcap = sipPcap([{ at: new Date(1795756864123), src: '10.0.0.1:5060', dst: '10.0.0.2:5060', raw, bytes: 20000, truncated: true }])
  assert.equal(pcap.readUInt32LE(24 + 8), 42 + raw.length, 'captured: the bytes stored')
  assert.equal(pcap.readUInt32LE(24 + 12), 42 + 20000, 'original: the whole message')
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pcap-')), 'cut.pcap')
  fs.writeFileSync(file, pcap)
  const read = spawnSync('tshark', ['-r', file, '-T', 'fields', '-e', 'frame.len', '-e', 'frame.cap_len', '-e', 'ip.len', '-e', 'udp.length', '-e', '_ws.short'], { encoding: 'utf8' })
  fs.rmSync(path.dirname(file), { recursive: true })
  assert.equal(read.status, 0, read.stderr)
  const [len, capLen, ipLen, udpLen, short] = read.stdout.trim().split('\t')
  assert.deepEqual([len, capLen, ipLen, udpLen].map(Number), [20042, 42 + raw.length, 20028, 20008])
  assert.match(short || '', /limited during capture/i, 'tshark: cut short by the capture, not malformed')
})

// IPv6 frames had UDP checksum 0, illegal over IPv6 (RFC 8200): tshark
// flagged each at Error level, and a replay tool may drop them (QA).
test('the pcap export: UDP checksums right over IPv6 and IPv4, odd lengths too (tshark checks them)', () => {
  const messages = [
    { at: new Date(1795756864123), src: '[2001:db8::1]:5060', dst: '[2001:db8::2]:5062', raw: 'SIP/2.0 200 OK\r\nCall-ID: v6\r\n\r\n' },
    { at: new Date(1795756864124), src: '[2001:db8::2]:5062', dst: '[2001:db8::1]:5060', raw: 'ACK sip:a@b SIP/2.0\r\nCall-ID: v6\r\n\r\nx' },
    { at: new Date(1795756864125), src: '10.0.0.1:5060', dst: '10.0.0.2:5060', raw: 'BYE sip:a@b SIP/2.0\r\nCall-ID: v6\r\n\r\n' }
  ]
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pcap-')), 'v6.pcap')
  fs.writeFileSync(file, sipPcap(messages))
  const read = spawnSync('tshark', ['-r', file, '-o', 'udp.check_checksum:TRUE', '-T', 'fields', '-e', 'udp.checksum.status', '-e', '_ws.expert.message'], { encoding: 'utf8' })
  fs.rmSync(path.dirname(file), { recursive: true })
  assert.equal(read.status, 0, read.stderr)
  const rows = read.stdout.trim().split('\n').map((line) => line.split('\t'))
  assert.deepEqual(rows.map(([status]) => status), ['1', '1', '1'], `tshark: each checksum good (1), got ${read.stdout}`)
  assert.ok(rows.every(([, expert]) => !expert), `no expert message: ${read.stdout}`)
})

test('a call\'s pcap is saved under its Call-ID in file-name-safe characters, never hidden nor taken for an option', () => {
  const { pcapFileName } = require('../../app/commands/calls-view')
  assert.equal(pcapFileName('a84b4c76e66710@pc33.atlanta.example.com'), 'a84b4c76e66710_pc33.atlanta.example.com.pcap')
  assert.equal(pcapFileName('.hidden'), '_hidden.pcap')
  assert.equal(pcapFileName('-rf /'), '_rf__.pcap')
  assert.equal(pcapFileName('x"\r\nSet-Cookie: a=b'), 'x___Set-Cookie__a_b.pcap')
  assert.equal(pcapFileName('é'.repeat(300)).length, 105)
})
