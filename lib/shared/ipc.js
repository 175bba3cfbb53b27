'use strict'

const WorkerDownError = require('../../exceptions/worker-down-error')
const { LEVELS } = require('./logger')

// The contract between the master (lib/master/worker-pool.js) and the worker
// entry it forks (lib/worker/worker-entry.js): the tags of the IPC messages,
// then the environment and argv each worker starts with.

// Tags of the arrays exchanged between the master and its workers over the
// cluster IPC channel (advanced serialization, so Buffers travel as bytes).
const TAGS = Object.freeze({
  // master → worker: [BATCH, kind, bytes, count, batchId, origin, redelivered, receivedAt, false, waits, byteShare]
  // bytes: the batch's, or where they lie in the disk buffer, [file, offset,
  // length] (a batch sent the first time while the master can use that,
  // see WorkerHandle#sendBatch: the worker reads them there);
  // batchId: unique in this master run (see batch-ids.js); origin: the identity
  // of the worker it was first sent to; redelivered: a worker holding it died;
  // receivedAt: when its first message arrived (epoch ms; each message's own is in its entry);
  // (false: not formed by the worker itself, see worker-runtime.js);
  // waits: 0, or the bounds of which the worker's share is nearly all in
  // flight (WAITS_COUNT: maxInFlight, WAITS_BYTES: memoryBudget), so the
  // master sends little more until it hears back: a worker that says what
  // it holds (Worker#heldBytes) answers FINISHED, and writes what it holds
  // (Worker#onMasterWaiting) unless only the bytes bound is near and it
  // holds under WAITS_AT of byteShare (its share of memoryBudget, bytes).
  BATCH: 1,
  // worker → master: [ACK, batches, processed, failed, dropped | null, received | null, taken, held | null]
  // acknowledges the oldest `batches` unacknowledged batches, in order;
  // dropped: { reason: n } for messages the worker refused by name;
  // received (receive 'reuseport' only, see worker-runtime.js): what the
  // worker's own socket brought since its last report, { messages, bytes,
  // dropped: { reason: n } | null (refused at the door), kernelDrops (its
  // socket's count so far), done (messages of its own batches acknowledged
  // by this ACK, beside `batches`) }. processed and failed count both kinds.
  // taken, held: as FINISHED's, after the write that stored these.
  ACK: 2,
  READY: 3, // worker → master: [READY, address | null] (address: of the worker's own socket, receive 'reuseport')
  INIT_FAILED: 4, // worker → master: [INIT_FAILED, message, { file, line } | null (where the worker module failed to load), code | null]
  SHUTDOWN: 5, // master → worker: [SHUTDOWN]
  CLOSED: 6, // worker → master: [CLOSED]
  STATS_REQ: 7, // master → worker: [STATS_REQ, requestId]
  STATS_RES: 8, // worker → master: [STATS_RES, requestId, stats]
  LOG: 9, // worker → master: [LOG, level, fields, message]
  ROLE: 10, // master → worker: [ROLE, { leader }]
  UNLISTEN: 11, // master → worker: [UNLISTEN] close your own socket (receive 'reuseport'); everything read from it is still processed
  UNLISTENED: 12, // worker → master: [UNLISTENED] the socket is closed, the last ACK carried its final counts
  // worker → master: [FINISHED, batches, held | null] how many of the
  // master's batches this worker has been through (doWork for each message)
  // since it started, sent when a batch is finished and not acknowledged
  // with it (a worker that acknowledges once stored). Of the batches it
  // holds, those are only awaiting storage; the next one is the one it is
  // processing (the evidence for poison, see lib/master/batch-fate.js).
  // Only when the worker has no progress file (lib/shared/progress-file.js,
  // where it writes the count instead), or after a batch that said the
  // master waits: then with `held`, the bytes it holds of what it took and
  // has not stored (Worker#heldBytes; null: it does not say), which the
  // master counts instead of those batches' own against its share of
  // memoryBudget (lib/master/in-flight-bytes.js).
  FINISHED: 13,
  // worker → master: [BUFFER_UNREADABLE, message] the worker could not read
  // a batch where the master said it lies in the disk buffer, and exits;
  // the master sends every batch's bytes from then on (redelivering that
  // one, like all a dead worker held, with its bytes).
  BUFFER_UNREADABLE: 14,
  // worker → master: [HELD_REQ, requestId] when was the oldest message you
  // hold received? master → worker: [HELD_RES, requestId, epoch ms | null]
  // (null: it holds none). Held: sent to any worker and not acknowledged,
  // waiting for room or for a slot's next worker, or being formed into a
  // batch (lib/master/pool-counters.js heldSince).
  HELD_REQ: 15,
  HELD_RES: 16,
  // master → worker: [WRITE] the next batch waits for room only a write can
  // make (what the worker holds, with the batches it has not taken, leaves
  // too little of its share of memoryBudget), and the worker, holding under
  // WAITS_AT of its share, did not write on `waits`: write now
  // (Worker#onMasterWaiting). Once until the next acknowledgement.
  WRITE: 17
})

// In flight past this share of a bound, a BATCH tells the worker the master waits: `waits` ORs these.
const WAITS_AT = 0.75
const WAITS_COUNT = 1
const WAITS_BYTES = 2

/**
 * Every variable the master sets for a worker. All share a prefix that no
 * option's environment name (COLLECTOR_<FLAG>, lib/master/options.js) may
 * start with, so a collector's own environment (say COLLECTOR_NAME for its
 * --name) never reaches a worker as part of this contract, nor the reverse
 * (test/unit/worker-env.test.js checks it against the option table).
 */
// How long a worker whose master died waits for its batches to finish
// before it flushes and exits (Worker#orphanTimeout's default).
const ORPHAN_TIMEOUT_MS = 60000

const WORKER_ENV_PREFIX = 'COLLECTOR_WORKER_'
const WORKER_ENV = Object.freeze({
  module: 'COLLECTOR_WORKER_MODULE', // absolute path of the user's worker module
  options: 'COLLECTOR_WORKER_OPTIONS', // the workerOptions object, as JSON
  collectorName: 'COLLECTOR_WORKER_COLLECTOR_NAME', // the balancer's `name`
  slot: 'COLLECTOR_WORKER_SLOT', // 0..instances-1, inherited by a replacement
  logLevel: 'COLLECTOR_WORKER_LOG_LEVEL', // index in LEVELS (logger.js); records below it stay in the worker
  // receive 'reuseport': JSON { host, port, udpReceiver, recvBufferSize,
  // batchDelay, maxInFlight }, the socket the worker binds itself; 'null' otherwise
  listen: 'COLLECTOR_WORKER_LISTEN',
  // JSON { file }, where the worker writes how many batches it has been
  // through (lib/shared/progress-file.js); 'null': none, it says so over IPC
  progress: 'COLLECTOR_WORKER_PROGRESS'
})

/**
 * The master's side: the environment of a worker it forks. Credentials stay
 * out of argv (`ps` shows it); workerOptions travel here for that reason.
 * @param {{ module: string, options: object, collectorName: string, slot: number, logLevel: number, listen?: object | null, progress?: { file: string } | null }} contract
 */
function workerEnv (contract) {
  return {
    [WORKER_ENV.module]: contract.module,
    [WORKER_ENV.options]: JSON.stringify(contract.options || {}),
    [WORKER_ENV.collectorName]: contract.collectorName,
    [WORKER_ENV.slot]: String(contract.slot),
    [WORKER_ENV.logLevel]: String(contract.logLevel),
    [WORKER_ENV.listen]: JSON.stringify(contract.listen || null),
    [WORKER_ENV.progress]: JSON.stringify(contract.progress || null)
  }
}

/** The worker's argv: only there for `ps` and `top`, never read back. */
function workerArgs (collectorName, slot) {
  return ['--name', collectorName, '--slot', String(slot)]
}

/**
 * The worker's side: reads and checks the contract from its environment.
 * Throws a WorkerDownError (ERR_WORKER_DOWN) naming the variable when one is
 * missing or malformed: a worker entry started by hand, or by a master of
 * another version.
 * @returns {{ module: string, options: object, collectorName: string, slot: number, logLevel: number, listen: object | null, progress: { file: string } | null }}
 */
function readWorkerEnv (env = process.env) {
  const text = (key) => {
    const value = env[WORKER_ENV[key]]
    if (typeof value !== 'string' || value === '') throw envError(key, 'is missing (the master sets it when it forks the worker)')
    return value
  }
  const integer = (key, max) => {
    const value = text(key)
    if (!/^\d+$/.test(value) || Number(value) > max) throw envError(key, `must be an integer from 0 to ${max}, got ${JSON.stringify(value)}`)
    return Number(value)
  }
  const json = (key, nullable) => {
    let value
    try {
      value = JSON.parse(text(key))
    } catch (err) {
      if (err.code === 'ERR_WORKER_DOWN') throw err
      // Not err.message: V8 quotes the text, and workerOptions may hold a credential.
      const at = /position (\d+)/.exec(err.message)
      throw envError(key, `is not JSON${at ? ` (at character ${at[1]})` : ''}`)
    }
    if (value === null && nullable) return null
    if (value === null || typeof value !== 'object') throw envError(key, `must be a JSON object${nullable ? ' or null' : ''}, got ${JSON.stringify(value)}`)
    return value
  }
  return {
    module: text('module'),
    options: json('options', false),
    collectorName: text('collectorName'),
    slot: integer('slot', Number.MAX_SAFE_INTEGER),
    logLevel: integer('logLevel', LEVELS.length), // LEVELS.length: 'silent'
    listen: json('listen', true),
    progress: json('progress', true)
  }
}

function envError (key, problem) {
  const variable = WORKER_ENV[key]
  return new WorkerDownError(`worker environment: ${variable} ${problem}`, { variable })
}

module.exports = Object.freeze({ ...TAGS, ORPHAN_TIMEOUT_MS, WAITS_AT, WAITS_COUNT, WAITS_BYTES, WORKER_ENV, WORKER_ENV_PREFIX, workerEnv, workerArgs, readWorkerEnv })
