'use strict'

// A forked INVITE (RFC 3261 §13.2.2.4, §16.7): a proxy forks the caller's
// INVITE to two phones, both answer (one dialog each, its own To tag), the
// caller keeps the first answer and ACKs then BYEs the second at once,
// while the conversation goes on in the first dialog. The call's answer and
// end are those of the first answered dialog, whatever order the messages
// are stored in, and however often; the early BYE ends no stream.

const test = require('node:test')
const assert = require('node:assert/strict')
const HEPjs = require('hep-js')
const hep = require('../../collectors/hep')
const { callUpdateOf, callOutcome } = require('../../collectors/hep/calls')
const { parseSip } = require('../../collectors/hep/sip')

const T0 = 1795590000000
const CALL_ID = 'fork-1@a.example.com'
const ALICE = '<sip:alice@a.example.com>;tag=a1'
const BOB = '<sip:+4930123@b.example.com>'
const SOFTPHONE = `${BOB};tag=soft.1` // answers first: the call's dialog (a dot in the tag, as many UAs write it)
const DESKPHONE = `${BOB};tag=desk.2` // answers 100 ms later: dropped by the caller

function sipText (line, from, to, cseq) {
  return [line, 'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1', `From: ${from}`, `To: ${to}`, `Call-ID: ${CALL_ID}`, `CSeq: ${cseq}`, 'Content-Length: 0', '', ''].join('\r\n')
}

/** The forked call's SIP in capture order, `{ name, at, text }`; `hangup` the party that ends the conversation 10 s after the answer. */
function forkedCall (hangup = 'caller') {
  const messages = [
    ['invite', 0, 'INVITE sip:+4930123@b.example.com SIP/2.0', ALICE, BOB, '1 INVITE'],
    ['ring-soft', 400, 'SIP/2.0 180 Ringing', ALICE, SOFTPHONE, '1 INVITE'],
    ['ring-desk', 450, 'SIP/2.0 180 Ringing', ALICE, DESKPHONE, '1 INVITE'],
    ['ok-soft', 2000, 'SIP/2.0 200 OK', ALICE, SOFTPHONE, '1 INVITE'],
    ['ok-desk', 2100, 'SIP/2.0 200 OK', ALICE, DESKPHONE, '1 INVITE'],
    ['ack-soft', 2010, 'ACK sip:+4930123@10.0.0.2 SIP/2.0', ALICE, SOFTPHONE, '1 ACK'],
    ['ack-desk', 2110, 'ACK sip:+4930123@10.0.0.3 SIP/2.0', ALICE, DESKPHONE, '1 ACK'],
    ['bye-desk', 2120, 'BYE sip:+4930123@10.0.0.3 SIP/2.0', ALICE, DESKPHONE, '2 BYE'],
    hangup === 'caller'
      ? ['bye-soft', 12000, 'BYE sip:+4930123@10.0.0.2 SIP/2.0', ALICE, SOFTPHONE, '2 BYE']
      : ['bye-soft', 12000, 'BYE sip:alice@10.0.0.1 SIP/2.0', SOFTPHONE, ALICE, '1 BYE']
  ]
  return messages.map(([name, offset, line, from, to, cseq]) => ({ name, at: T0 + offset, text: sipText(line, from, to, cseq) }))
}

// What MongoDB does with an update of callUpdateOf: $min, $max, $set on dotted paths.
function apply (doc, { min, max, set }) {
  const place = (path) => {
    const keys = path.split('.')
    let at = doc
    for (const key of keys.slice(0, -1)) at = at[key] ?? (at[key] = {})
    return [at, keys.at(-1)]
  }
  for (const [path, value] of Object.entries(min)) { const [at, key] = place(path); if (at[key] === undefined || value < at[key]) at[key] = value }
  for (const [path, value] of Object.entries(max)) { const [at, key] = place(path); if (at[key] === undefined || value > at[key]) at[key] = value }
  for (const [path, value] of Object.entries(set)) { const [at, key] = place(path); at[key] = value }
  return doc
}

function storedIn (order, messages) {
  const byName = new Map(messages.map((m) => [m.name, m]))
  const doc = { callId: CALL_ID }
  for (const name of order) {
    const m = byName.get(name)
    apply(doc, callUpdateOf(parseSip(Buffer.from(m.text)), m.at))
  }
  return doc
}

// A seeded shuffle (xorshift), so that a failure names an order that can be run again.
function shuffled (names, seed) {
  const out = [...names]
  let x = seed
  for (let i = out.length - 1; i > 0; i--) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5
    const j = (x >>> 0) % (i + 1);
    [out[i], out[j]] = [out[j], out[i]]
  }
  return out
}

test('a forked call: answered by the first 200, ended by the BYE of that dialog 10 s later, whatever order its messages are stored in and however often', () => {
  for (const hangup of ['caller', 'callee']) {
    const messages = forkedCall(hangup)
    const names = messages.map((m) => m.name)
    const orders = {
      capture: names,
      reversed: [...names].reverse(),
      // A second agent's copies of the desk phone's dialog arrive first: its BYE before the first 200.
      'desk dialog first': ['invite', 'ring-desk', 'ok-desk', 'ack-desk', 'bye-desk', 'ring-soft', 'ok-soft', 'ack-soft', 'bye-soft'],
      'every message twice (redelivered)': [...names, ...names],
      ...Object.fromEntries([1, 2, 3, 4, 5, 6, 7, 8].map((seed) => [`shuffled (seed ${seed})`, shuffled(names, seed * 2654435761)]))
    }
    for (const [label, order] of Object.entries(orders)) {
      const o = callOutcome(storedIn(order, messages))
      const what = `${hangup} hangs up, stored in ${label} order: ${order.join(' ')}`
      assert.deepEqual([o.outcome, o.status, o.answered], ['answered', 200, true], what)
      assert.deepEqual([+o.answeredAt, +o.endedAt, o.durationMs], [T0 + 2000, T0 + 12000, 10000], what)
      assert.equal(o.endedBy, hangup, what)
      assert.equal(o.otherDialogByes, 1, `${what}: the desk phone's BYE counted`)
    }
  }
})

test('a forked call in progress: the BYE of the dialog the caller dropped does not end it, in whichever order it is stored', () => {
  const messages = forkedCall().filter((m) => m.name !== 'bye-soft')
  for (const order of [messages.map((m) => m.name), ['invite', 'ok-desk', 'bye-desk', 'ok-soft'], ['bye-desk', 'ok-desk', 'ok-soft', 'invite']]) {
    const o = callOutcome(storedIn(order, messages))
    assert.deepEqual([o.outcome, +o.answeredAt, o.endedAt, o.endedBy, o.durationMs, o.otherDialogByes], ['answered', T0 + 2000, null, null, null, 1], order.join(' '))
  }
})

test('a call whose answer was not captured ends at its first BYE, as before; a call stored before per-dialog BYEs reads as it did', () => {
  const messages = forkedCall('callee')
  const o = callOutcome(storedIn(['invite', 'bye-soft', 'bye-desk'], messages))
  assert.deepEqual([o.answered, o.answerUnseen, +o.endedAt, o.endedBy, o.otherDialogByes], [true, true, T0 + 2120, 'caller', 1], 'a BYE says it was answered')
  const old = callOutcome({ callId: 'old', callerTag: 'a1', answeredAt: new Date(T0), endedAt: new Date(T0 + 5000), firstBye: `${new Date(T0 + 5000).toISOString()}|b1` })
  assert.deepEqual([old.durationMs, old.endedBy, old.otherDialogByes], [5000, 'callee', 0])
  // Answered and ended before the upgrade, the other end's crossing BYE stored after it: the end stays the first BYE.
  const crossing = { ...storedIn(['bye-soft'], forkedCall('caller')), callId: 'old', callerTag: 'a1', answeredAt: new Date(T0), endedAt: new Date(T0 + 5000), firstBye: `${new Date(T0 + 5000).toISOString()}|b1` }
  const mixed = callOutcome(crossing)
  assert.deepEqual([mixed.durationMs, mixed.endedBy, mixed.otherDialogByes], [5000, 'callee', 1])
})

// The HEP definition's decode and enrich, as a worker runs them, with the
// call's media known (an SSRC its RTCP named): what the streams sink gets.
function worker () {
  const state = hep.definition.state({ codec: 'G.711', jitterBuffer: 50, maxSources: 1000 })
  state.ledger.addSsrc(CALL_ID, '1111')
  const run = (m) => hep.definition.enrich(hep.definition.decode({ data: HEPjs.encapsulate(m.text, hepInfo(m.at)) }, {}, { receivedAt: new Date(m.at) }), state, {})
  return { run, state }
}

function hepInfo (at) {
  return { protocolFamily: 2, protocol: 17, srcIp: '10.0.0.1', dstIp: '10.0.0.2', srcPort: 5060, dstPort: 5060, timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000, payloadType: 1, captureId: 1 }
}

test('a worker ends the call\'s streams on the BYE of its first answered dialog only: the dropped dialog\'s BYE ends none, and is counted', () => {
  const { run, state } = worker()
  const ends = {}
  for (const m of forkedCall()) ends[m.name] = run(m).ends
  assert.deepEqual(ends['bye-desk'], [], 'the BYE of the dialog the caller dropped ends no stream')
  assert.deepEqual(ends['bye-soft'], [{ endID: '1111', callId: CALL_ID, timestamp: new Date(T0 + 12000) }], 'the conversation\'s BYE ends them')
  assert.equal(hep.definition.stats(state).otherDialogByes, 1)
  // Without an answer seen (the worker came after it): a BYE ends the streams, as it always did.
  const late = worker()
  assert.equal(late.run(forkedCall().find((m) => m.name === 'bye-desk')).ends.length, 1)
})

test('a call stores the BYEs of at most 8 dialogs per worker, the rest counted; the answered dialog\'s BYE always', () => {
  const { run } = worker()
  const [invite, , , ok] = forkedCall()
  run(invite)
  run(ok)
  const bye = (tag, at) => ({ at, text: sipText('BYE sip:+4930123@10.0.0.9 SIP/2.0', ALICE, `${BOB};tag=${tag}`, '2 BYE') })
  const items = Array.from({ length: 10 }, (_, i) => run(bye(`made-up-${i}`, T0 + 3000 + i)))
  const stored = (item) => Object.keys(item.call.min).some((path) => path.startsWith('byes.'))
  assert.deepEqual(items.map(stored), [true, true, true, true, true, true, true, true, false, false])
  assert.deepEqual(items.map((item) => Boolean(item.byePastCap)), [false, false, false, false, false, false, false, false, true, true])
  assert.equal(run(bye('made-up-0', T0 + 4000)).byePastCap, undefined, 'a dialog already stored has its place')
  const end = run(bye('soft.1', T0 + 12000))
  assert.ok(stored(end) && !end.byePastCap, 'the answered dialog\'s BYE is stored past the bound')
  assert.equal(end.ends.length, 1)
})

test('a forked call whose conversation\'s BYE was never captured: still open while recent, "no BYE seen" once quiet past the bound; the other dialog\'s BYE is not its end', () => {
  const messages = forkedCall().filter((m) => m.name !== 'bye-soft')
  const doc = storedIn(messages.map((m) => m.name), messages)
  const lastSeen = T0 + 2120
  const live = callOutcome(doc, { now: lastSeen + 1000, byeUnseenAfter: 60000 })
  assert.deepEqual([live.outcome, live.endedAt, live.endUnseen, live.otherDialogByes], ['answered', null, false, 1])
  const quiet = callOutcome(doc, { now: lastSeen + 60001, byeUnseenAfter: 60000 })
  assert.deepEqual([quiet.outcome, quiet.endedAt, quiet.endUnseen, quiet.durationMs, quiet.minDurationMs], ['answered', null, true, null, 120])
  // Its BYE stored (no `endedAt` field: the end is read from `byes`), the call is over, however quiet.
  const ended = callOutcome(storedIn(forkedCall().map((m) => m.name), forkedCall()), { now: T0 + 86400000, byeUnseenAfter: 60000 })
  assert.deepEqual([ended.endUnseen, ended.durationMs], [false, 10000])
})
