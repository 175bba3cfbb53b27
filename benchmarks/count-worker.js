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
    const { user, system } = process.cpuUsage()
    return { count: this.count, peakRss: this.peakRss, cpuMs: (user + system) / 1000 }
  }
}

module.exports = CountWorker
