'use strict'
const { Worker } = require('..')

// The benchmark's worker: counts, and reports its peak RSS.
class CountWorker extends Worker {
  init () {
    this.count = 0
    this.peakRss = 0
    this.timer = setInterval(() => this.sampleRss(), 100).unref()
  }

  doWork () {
    this.count++
  }

  sampleRss () {
    this.peakRss = Math.max(this.peakRss, process.memoryUsage().rss)
  }

  stats () {
    this.sampleRss()
    return { count: this.count, peakRss: this.peakRss }
  }
}

module.exports = CountWorker
