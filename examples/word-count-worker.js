'use strict'
// The worker of udp-collector.js: runs in each forked process.
const { Worker } = require('..')

class WordCountWorker extends Worker {
  init () {
    this.words = 0
  }

  doWork ({ data, rinfo }) {
    this.words += data.toString().split(/\s+/).filter(Boolean).length
    this.logger.debug({ from: rinfo.address }, 'datagram')
  }

  stats () {
    return { words: this.words }
  }
}

module.exports = WordCountWorker
