'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { LoadBalancer, WorkerDownError, InvalidOptionError } = require('../..')
const { COUNTING, HOST, fixture, startLb, settled, udpSocket, sendPaced, waitFor, lines } = require('../helpers/lb')
const { removeDir } = require('../helpers/temp-dir')
const { captureLogger } = require('../helpers/capture-logger')

function assertBalanced (s) {
  assert.equal(s.received, s.processed + s.failed + s.dropped.total + s.deadLettered, `received ${s.received} = processed ${s.processed} + failed ${s.failed} + dropped ${s.dropped.total} + deadLettered ${s.deadLettered}`)
  assert.equal(s.lost, s.dropped.workerLost)
  assert.ok(s.lost >= 0)
  assert.equal(s.inFlight, 0)
}

function recordingLogger () {
  const records = []
  const logger = { child: () => logger }
  for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) {
    logger[level] = (fields, msg) => records.push({ level, fields, msg })
  }
  return { logger, records }
}

test('a message that crashes every worker it reaches is redelivered to the respawn twice, then given up and kept as a dead letter; load continues, the books balance', async (t) => {
  const deadLetterDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-dead-'))
  t.after(() => removeDir(deadLetterDir))
  const lb = await startLb(t, { instances: 2, respawnDelay: 20, deadLetterDir, workerOptions: { crashOn: 'boom' } })
  const exits = []
  const respawns = []
  lb.on('workerExit', (info) => exits.push(info))
  lb.on('workerRespawned', (info) => respawns.push(info))
  const socket = await udpSocket(t)
  await sendPaced(lb, socket, lines(50, 'a'))
  await sendPaced(lb, socket, [Buffer.from('boom'), ...lines(49, 'b')])
  await waitFor(() => respawns.length === 3, { what: 'three deliveries of the crashing batch, each followed by a respawn' })
  await sendPaced(lb, socket, lines(100, 'c'))
  await settled(lb)
  const running = await lb.stats()
  assert.equal(running.restarts.workers, 3)
  assert.equal(running.workers.length, 2)
  assert.ok(running.workers.every((w) => w.state === 'ready'))
  await lb.stop()
  const s = lb.summary()
  assert.equal(exits.length, 3)
  assert.ok(exits.every((e) => e.code === 3 && e.slot === exits[0].slot))
  assert.equal(respawns[0].slot, exits[0].slot)
  assert.notEqual(respawns[0].pid, exits[0].pid)
  assert.equal(s.received, 200)
  assert.ok(s.deadLettered >= 1, 'the crashing batch was given up')
  assert.equal(s.lost, 0, 'and kept, not dropped')
  assert.deepEqual([s.deadLetters.files, s.deadLetters.messages], [1, s.deadLettered], 'one dead letter holds it')
  assert.ok(s.processed >= 150, `the other worker and the respawn processed their share (${s.processed})`)
  assertBalanced(s)
})

test('doWork throwing is counted as failed and the worker keeps going', async (t) => {
  const exits = []
  const lb = await startLb(t, { instances: 1, workerOptions: { failEvery: 5 } })
  lb.on('workerExit', (info) => exits.push(info))
  const pid = (await lb.stats()).workers[0].pid
  const socket = await udpSocket(t)
  await sendPaced(lb, socket, lines(50))
  const s = await settled(lb)
  assert.equal(s.failed, 10)
  assert.equal(s.processed, 40)
  const [worker] = (await lb.stats()).workers
  assert.equal(worker.pid, pid)
  assert.equal(worker.failed, 10)
  assert.equal(worker.custom.seen, 50)
  assert.deepEqual(exits, [])
  await lb.stop()
  assertBalanced(lb.summary())
})

test('a worker\'s error quoting what a sender sent is logged escaped: no raw ESC, C1 or bidi override reaches the log file (QA)', async (t) => {
  const { logger, records } = captureLogger()
  const lb = await startLb(t, { instances: 1, logger, workerOptions: { failQuoting: true } })
  const socket = await udpSocket(t)
  await sendPaced(lb, socket, ['fail \u001b[2J\u009b\u202eexe.gnp'])
  const s = await settled(lb)
  assert.equal(s.failed, 1)
  const logged = await waitFor(() => records.find((r) => r.msg.startsWith('doWork failed')), { what: 'the doWork failed line' })
  assert.equal(logged.fields.err.message, 'cannot store fail \\x1b[2J\\x9b\\u202eexe.gnp')
  assert.equal(logged.msg, 'doWork failed: cannot store fail \\x1b[2J\\x9b\\u202eexe.gnp', 'what went wrong, on the line itself')
  // eslint-disable-next-line no-control-regex
  for (const text of [logged.fields.err.message, logged.fields.err.stack]) assert.doesNotMatch(text, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/)
  assert.match(logged.fields.err.stack, /\n {4}at /, 'the stack keeps its lines')
})

test('crash loop: past maxCrashes the slot is given up, logged, and an error says every worker is down', async (t) => {
  const marker = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-crash-')), 'started')
  t.after(() => removeDir(path.dirname(marker)))
  const { logger, records } = recordingLogger()
  const lb = await startLb(t, {
    worker: fixture('failing-init-worker.js'),
    instances: 1,
    respawnDelay: 10,
    maxCrashes: 2,
    workerOptions: { marker },
    logger
  })
  const failedSlots = []
  lb.pool.on('slotFailed', (slot) => failedSlots.push(slot))
  const errors = []
  lb.on('error', (err) => errors.push(err))
  const [{ pid }] = (await lb.stats()).workers
  process.kill(pid, 'SIGKILL')
  await waitFor(() => errors.length === 1, { what: 'the every-worker-down error' })
  assert.deepEqual(failedSlots, [0])
  assert.ok(errors[0] instanceof WorkerDownError)
  assert.equal(errors[0].code, 'ERR_WORKER_DOWN')
  assert.ok(records.some((r) => r.level === 'error' && /given up/.test(r.msg) && r.fields.slot === 0))
  assert.ok(records.filter((r) => r.msg === 'worker respawn failed').length >= 2)
  assert.equal(lb.pool.rotation.length, 0)
  // Nothing to deliver to: datagrams are counted as dropped, not lost silently.
  const socket = await udpSocket(t)
  await sendPaced(lb, socket, lines(5))
  assert.equal(lb.summary().dropped.queueFull, 5)
  // Fixed, a rolling restart brings the slot back: no longer given up, its crash history forgotten.
  fs.rmSync(marker)
  await lb.restart()
  assert.equal(lb.pool.failedSlots.size, 0, 'the slot is back')
  assert.deepEqual(lb.pool.crashes[0], [])
  await sendPaced(lb, socket, lines(5))
  await waitFor(() => lb.summary().processed === 5, { what: 'the slot\'s new worker takes messages' })
})

test('start() rejects with WorkerDownError when init() throws', async (t) => {
  const lb = new LoadBalancer({ worker: fixture('failing-init-worker.js'), instances: 2, host: HOST })
  t.after(() => lb.stop())
  await assert.rejects(lb.start(), (err) => {
    assert.ok(err instanceof WorkerDownError)
    assert.equal(err.code, 'ERR_WORKER_DOWN')
    assert.match(err.message, /planned init failure/)
    return true
  })
  assert.equal(lb.address(), null)
})

test('an invalid worker path throws InvalidOptionError from the constructor', () => {
  assert.throws(() => new LoadBalancer({ worker: './no/such/worker.js' }), (err) => {
    assert.ok(err instanceof InvalidOptionError)
    assert.equal(err.code, 'ERR_INVALID_OPTION')
    assert.match(err.message, /no\/such\/worker\.js/)
    return true
  })
  assert.throws(() => new LoadBalancer({}), { code: 'ERR_INVALID_OPTION' })
  assert.throws(() => new LoadBalancer({ worker: COUNTING, distribution: 'random' }), { code: 'ERR_INVALID_OPTION', message: /"random"/ })
})

test('a plain-object worker module works, with the base hooks filled in', async (t) => {
  const lb = await startLb(t, { worker: fixture('plain-worker.js'), instances: 2 })
  const socket = await udpSocket(t)
  await sendPaced(lb, socket, lines(20))
  await settled(lb)
  const { workers } = await lb.stats()
  assert.deepEqual(workers.map((w) => w.custom.kind), ['plain', 'plain'])
  assert.equal(workers.reduce((n, w) => n + w.custom.seen, 0), 20)
  await lb.stop()
  assertBalanced(lb.summary())
})

test('a factory worker module gets workerOptions', async (t) => {
  const lb = await startLb(t, { worker: fixture('factory-worker.js'), instances: 1, workerOptions: { tag: 'tagged' } })
  const socket = await udpSocket(t)
  await sendPaced(lb, socket, lines(7))
  await settled(lb)
  const [worker] = (await lb.stats()).workers
  assert.deepEqual([worker.custom.kind, worker.custom.tag, worker.custom.seen], ['factory', 'tagged', 7])
})
