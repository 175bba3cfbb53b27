'use strict'

// A HEP packet holding several SIP messages (a TCP segment heplify copied
// whole): of three calls, the master makes it three messages
// (collectors/hep/call-parts.js); of one call, it is one message of
// several records. Each is stored once when it is delivered again to
// another worker, whatever the new-key cap left out the first time. The
// calls' upserts are held unanswered by a proxy in front of the database
// (their inserts stored), so that the worker that took the packet dies
// before its acknowledgement.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { MongoClient } = require('mongodb')
const HEPjs = require('hep-js')
const hep = require('../../collectors/hep')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { createWireProxy, HOLD } = require('../helpers/wire-proxy')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { waitFor } = require('../helpers/wait-for')

const T0 = Date.now() - 60000

function rcinfo (at) {
  return { protocolFamily: 2, protocol: 6, srcIp: '10.0.0.1', srcPort: 5060, dstIp: '10.0.0.2', dstPort: 5060, timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000, payloadType: 1, captureId: 7 }
}

function sip (first, callId, cseq) {
  return [first, 'Via: SIP/2.0/TCP 10.0.0.1:5060;branch=z9hG4bK1', 'From: <sip:alice@a.example>;tag=a1', 'To: <sip:bob@b.example>', `Call-ID: ${callId}`, `CSeq: ${cseq}`, 'Content-Length: 0', '', ''].join('\r\n')
}

async function startBehindProxy (t, argv) {
  const { uri } = await getTestMongo()
  const proxy = { hold: true }
  const wire = await createWireProxy({ targetPort: Number(new URL(uri).port), answer: (name) => proxy.hold && name === 'update' ? HOLD : undefined })
  t.after(() => wire.close())
  const database = uniqueDbName('hep_redelivery')
  const config = new hep.Config(['--port', '0', '--database', database, '--flush-interval', '50ms', '--buffer-dir', tempBufferDir(t), ...argv]).getConfig()
  const collector = new hep.Collector({ ...config, workerOptions: { mongoUri: wire.uri } })
  t.after(() => collector.stop())
  await collector.start()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  return { collector, proxy, db: client.db(database), port: collector.address().port }
}

test('a packet of several SIP messages delivered again stores each once though the new-key cap left one out the first time', { timeout: 120000 }, async (t) => {
  // The share of new calls is per clock minute: all of the first delivery in one.
  if (new Date().getSeconds() > 45) await new Promise((resolve) => setTimeout(resolve, (61 - new Date().getSeconds()) * 1000))
  const { collector, proxy, db, port } = await startBehindProxy(t, ['-i', '1', '--max-new-keys-per-minute', '2'])
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = async (payload, at) => { socket.send(HEPjs.encapsulate(payload, rcinfo(at)), port, '127.0.0.1'); await new Promise((resolve) => setTimeout(resolve, 100)) }
  // Calls a and c take the worker's share of new calls; b, new, is left out of the segment.
  proxy.hold = false
  await send(sip('INVITE sip:bob@b.example SIP/2.0', 'a@x', '1 INVITE'), T0)
  await send(sip('INVITE sip:bob@b.example SIP/2.0', 'c@x', '1 INVITE'), T0 + 1)
  await waitFor(async () => (await db.collection('calls').countDocuments()) === 2, { what: 'calls a and c stored' })
  // From here the worker's writes of the calls hang (their inserts stored): it dies holding the segment.
  proxy.hold = true
  await send(sip('SIP/2.0 100 Trying', 'a@x', '1 INVITE') + sip('INVITE sip:bob@b.example SIP/2.0', 'b@x', '1 INVITE') + sip('SIP/2.0 100 Trying', 'c@x', '1 INVITE'), T0 + 2)
  const messages = db.collection('sip_messages')
  await waitFor(async () => (await messages.countDocuments()) === 4, { what: 'the first delivery\'s documents' })
  const [worker] = (await collector.stats()).workers
  process.kill(worker.pid, 'SIGKILL')
  proxy.hold = false
  await waitFor(async () => (await db.collection('calls').countDocuments()) === 3, { timeout: 60000, what: 'the three calls, once delivered again' })
  await new Promise((resolve) => setTimeout(resolve, 500))
  const perCall = {}
  for (const doc of await messages.find().toArray()) perCall[doc.callId] = (perCall[doc.callId] || 0) + 1
  assert.deepEqual(perCall, { 'a@x': 2, 'b@x': 1, 'c@x': 2 })
})

test('a copy of a segment of several SIP messages that comes after the worker storing its original died is known as one (the warm-up reads them back)', { timeout: 120000 }, async (t) => {
  const { warmCopies } = require('../../collectors/hep/copy-warmup')
  const { proxy, db, port } = await startBehindProxy(t, ['-i', '1'])
  proxy.hold = false
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const segment = sip('SIP/2.0 100 Trying', 'a@x', '1 INVITE') + sip('SIP/2.0 180 Ringing', 'a@x', '1 INVITE')
  socket.send(HEPjs.encapsulate(sip('INVITE sip:bob@b.example SIP/2.0', 'a@x', '1 INVITE'), rcinfo(T0 - 10)), port, '127.0.0.1')
  socket.send(HEPjs.encapsulate(segment, rcinfo(T0)), port, '127.0.0.1')
  await waitFor(async () => (await db.collection('sip_messages').countDocuments()) === 3, { what: 'the INVITE and the segment\'s two messages' })
  // The worker after it: its copy memory read back from the database, then the copy of the segment another agent sent.
  const settings = { hepCopyWindow: 200, hepMessagesPerCall: 1000, hepCorrelationHeaders: [], sipMessagesCollection: 'sip_messages', streamsCollection: 'streams' }
  const state = hep.definition.state(settings)
  assert.equal(await warmCopies(state, db, settings), 3, 'the INVITE alone and the segment\'s two, each once')
  const { hepRecordOf } = require('../../collectors/hep/hep-records')
  const copy = hepRecordOf(HEPjs.encapsulate(segment, { ...rcinfo(T0), captureId: 8 }), settings, new Date())
  const items = hep.definition.enrich(copy, state, { key: () => Buffer.alloc(12, 1) })
  assert.deepEqual(items.map((item) => item.duplicate === true), [true, true])
})
