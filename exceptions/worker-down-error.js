'use strict'
const CollectorError = require('./collector-error')

/** A worker exited, failed to start, or is crash-looping. */
class WorkerDownError extends CollectorError {
  constructor (message, props) {
    super(message, 'ERR_WORKER_DOWN', props)
  }
}

module.exports = WorkerDownError
