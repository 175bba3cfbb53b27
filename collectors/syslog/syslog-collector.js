'use strict'

const path = require('node:path')
const MongoCollector = require('../mongo-collector')
const SyslogConfig = require('./syslog-config')

const DEFAULTS = { name: 'syslog', protocol: 'udp', port: 5514, framing: 'auto', worker: path.join(__dirname, 'syslog-worker.js') }

/** The syslog collector: UDP or TCP (auto-detected RFC 6587 framing) into MongoDB. */
class SyslogCollector extends MongoCollector {
  static workerOptionKeys = SyslogConfig.WORKER_KEYS

  constructor (options = {}) {
    super({ ...DEFAULTS, ...options })
  }
}

module.exports = SyslogCollector
