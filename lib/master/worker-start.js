'use strict'

const cluster = require('node:cluster')
const path = require('node:path')
const ipc = require('../shared/ipc')
const WorkerDownError = require('../../exceptions/worker-down-error')

// How the master starts a worker process (WorkerPool#fork) and learns it is ready.

const WORKER_ENTRY = path.join(__dirname, '..', 'worker', 'worker-entry.js')

/**
 * Forks the worker of `slot` with the environment of ipc.workerEnv.
 * `logLevel`: records below it are dropped in the worker, before IPC;
 * `listen`: the socket it binds itself (receive 'reuseport'), or null;
 * `progressFile`: where it says how far it got (lib/shared/progress-file.js), or null.
 */
function forkWorker (options, slot, { logLevel, listen, progressFile }) {
  cluster.setupPrimary({
    exec: WORKER_ENTRY,
    args: ipc.workerArgs(options.name, slot),
    // The master's own Node flags, then workersNodeArgs (the later of two wins).
    execArgv: [...ownNodeArgs(process.execArgv), ...options.workersNodeArgs],
    serialization: 'advanced'
  })
  return cluster.fork(ipc.workerEnv({
    module: options.worker,
    options: options.workerOptions,
    collectorName: options.name,
    slot,
    logLevel,
    listen,
    progress: progressFile && { file: progressFile }
  }))
}

// The master's Node flags a worker takes: not the test runner's, and not
// code given on the command line (`node -e`, `-p`), which a worker would
// run again in place of its entry.
const CODE_FLAGS = new Set(['-e', '--eval', '-p', '--print', '-pe', '-ep'])
// The test runner's flags given a value apart (`--test-name-pattern x`).
const TEST_VALUE_FLAGS = new Set(['--test-name-pattern', '--test-skip-pattern', '--test-reporter', '--test-reporter-destination', '--test-concurrency', '--test-timeout', '--test-shard', '--test-coverage-include', '--test-coverage-exclude'])
function ownNodeArgs (execArgv) {
  const kept = []
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]
    if (CODE_FLAGS.has(arg)) {
      if (!CODE_FLAGS.has(execArgv[i + 1])) i++ // its code (`-p -e CODE`: -e's)
    } else if (TEST_VALUE_FLAGS.has(arg)) {
      i++
    } else if (!arg.startsWith('--test') && !/^--(eval|print)=/.test(arg) && arg !== '-i' && arg !== '--interactive') kept.push(arg)
  }
  return kept
}

/**
 * Resolves with `handle` once its worker is ready; rejects (WorkerDownError)
 * if it fails to start or exits first; `workerCode`, the code of what the
 * worker threw (ERR_INVALID_OPTION: it refused an option, a configuration
 * mistake no restart mends).
 */
function waitReady (handle) {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      handle.removeListener('ready', onReady)
      handle.removeListener('initFailed', onFailed)
      handle.removeListener('gone', onGone)
    }
    const onReady = () => { cleanup(); resolve(handle) }
    const onFailed = (message, where, code) => {
      cleanup()
      reject(new WorkerDownError(`worker failed to start: ${message}`, { slot: handle.slot, ...where, ...(code ? { workerCode: code } : {}) }))
    }
    const onGone = () => { cleanup(); reject(new WorkerDownError(`worker for slot ${handle.slot} exited before it was ready`, { slot: handle.slot })) }
    handle.on('ready', onReady)
    handle.on('initFailed', onFailed)
    handle.on('gone', onGone)
  })
}

module.exports = { ownNodeArgs, forkWorker, waitReady }
