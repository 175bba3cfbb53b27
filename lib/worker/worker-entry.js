'use strict'

// The process entry of every forked worker: loads the user's worker module
// (named by the master), runs it, and ignores terminal signals so that a
// Ctrl-C or PM2 tree-kill lets the master drain us instead of killing us
// mid-batch. If the master disappears we flush and leave.
const cluster = require('node:cluster')
const WorkerRuntime = require('./worker-runtime')
const ipc = require('../shared/ipc')
const { instantiateWorker } = require('./load-worker')
const { startHeapTrim } = require('./heap-trim')

// Installed by Node's cluster child before any module of ours runs: on
// 'disconnect' it re-emits the event on cluster.worker and, unless the
// master asked for the disconnect, calls process.exit(0) at once.
const clusterDisconnectListeners = process.listeners('disconnect')

async function main () {
  let runtime
  let address = null
  try {
    const contract = ipc.readWorkerEnv(process.env)
    const worker = instantiateWorker(contract.module, contract.options)
    runtime = new WorkerRuntime(worker, process, { minLevel: contract.logLevel, progressFile: contract.progress && contract.progress.file })
    worker.logger = runtime.createLogger()
    worker.slot = contract.slot
    worker.collectorName = contract.collectorName
    process.on('message', (message) => runtime.onMessage(message))
    await worker.init()
    // receive 'reuseport': ready means bound too.
    if (contract.listen) address = await runtime.listen(contract.listen)
  } catch (err) {
    return failStart(err)
  }
  // The master died: cluster's exit(0) would throw away everything this
  // worker holds. Its listener goes (listeners the user's worker added stay);
  // ours keeps its event and finishes the queue (for up to the worker's
  // orphanTimeout), flushes (to the database, which needs no master),
  // closes and exits.
  for (const listener of clusterDisconnectListeners) process.removeListener('disconnect', listener)
  process.once('disconnect', () => {
    if (cluster.worker) cluster.worker.emit('disconnect')
    runtime.held.masterGone()
    runtime.orphaned()
  })
  startHeapTrim()
  process.send([ipc.READY, address])
}

// The master learns why over IPC (it raises WorkerDownError with the
// message, and the file and line at fault when the module did not load;
// with the error's code, so that an option the worker refused is the
// configuration mistake it is).
// Started by hand there is no channel: one line on stderr, with the error's
// code, instead of a stack trace.
function failStart (err) {
  const detail = err && err.message ? err.message : String(err)
  const where = err && err.file ? { file: err.file, line: err.line } : null
  if (typeof process.send === 'function') return process.send([ipc.INIT_FAILED, detail, where, (err && err.code) || null], () => process.exit(1))
  process.stderr.write(`collector-cluster worker: ${err && err.code ? `${err.code}: ` : ''}${detail}\n`)
  process.exitCode = 1
}

process.on('SIGINT', () => {})
process.on('SIGTERM', () => {})
main()
