'use strict'

// The process entry of every forked worker: loads the user's worker module
// (named by the master), runs it, and ignores terminal signals so that a
// Ctrl-C or PM2 tree-kill lets the master drain us instead of killing us
// mid-batch. If the master disappears we flush and leave.
const WorkerRuntime = require('./worker-runtime')
const ipc = require('./ipc')
const { instantiateWorker } = require('./load-worker')

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
  // Node's cluster child exits at once on 'disconnect' (the master died)
  // unless the master asked for it; that would throw away everything this
  // worker holds. Its listener goes: ours finishes the queue, flushes (to
  // the database, which needs no master) and exits.
  process.removeAllListeners('disconnect')
  process.on('disconnect', () => runtime.shutdown())
  process.send([ipc.READY])
}

process.on('SIGINT', () => {})
process.on('SIGTERM', () => {})
main()
