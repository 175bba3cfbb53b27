'use strict'

// The process entry of every forked worker: loads the user's worker module
// (named by the master), runs it, and ignores terminal signals so that a
// Ctrl-C or PM2 tree-kill lets the master drain us instead of killing us
// mid-batch. If the master disappears we flush and leave.
const cluster = require('node:cluster')
const WorkerRuntime = require('./worker-runtime')
const ipc = require('../shared/ipc')
const { instantiateWorker } = require('./load-worker')

// Installed by Node's cluster child before any module of ours runs: on
// 'disconnect' it re-emits the event on cluster.worker and, unless the
// master asked for the disconnect, calls process.exit(0) at once.
const clusterDisconnectListeners = process.listeners('disconnect')

async function main () {
  let runtime
  try {
    const options = JSON.parse(process.env.COLLECTOR_WORKER_OPTIONS || '{}')
    const worker = instantiateWorker(process.env.COLLECTOR_WORKER_MODULE, options)
    runtime = new WorkerRuntime(worker)
    worker.logger = runtime.createLogger()
    worker.slot = Number(process.env.COLLECTOR_SLOT)
    worker.collectorName = process.env.COLLECTOR_NAME
    process.on('message', (message) => runtime.onMessage(message))
    await worker.init()
  } catch (err) {
    const detail = err && err.message ? err.message : String(err)
    return process.send([ipc.INIT_FAILED, detail], () => process.exit(1))
  }
  // The master died: cluster's exit(0) would throw away everything this
  // worker holds. Its listener goes (listeners the user's worker added stay);
  // ours keeps its event and finishes the queue, flushes (to the database,
  // which needs no master), closes and exits.
  for (const listener of clusterDisconnectListeners) process.removeListener('disconnect', listener)
  process.once('disconnect', () => {
    if (cluster.worker) cluster.worker.emit('disconnect')
    runtime.shutdown()
  })
  process.send([ipc.READY])
}

process.on('SIGINT', () => {})
process.on('SIGTERM', () => {})
main()
