'use strict'

const path = require('node:path')
const { MongoCollector } = require('collector-cluster')

/**
 * The master: a MongoCollector (it settles the database before the workers
 * start) whose workers also get `prefix`. Hash distribution keeps one
 * sender's metrics on one worker, so its increments coalesce there.
 */
class MetricsCollector extends MongoCollector {
  static workerOptionKeys = [...MongoCollector.workerOptionKeys, 'prefix']

  constructor (options = {}) {
    super({ name: 'metrics', port: 8125, distribution: 'hash', worker: path.join(__dirname, 'metrics-worker.js'), ...options })
  }
}

module.exports = MetricsCollector
