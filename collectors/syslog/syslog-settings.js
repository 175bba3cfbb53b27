'use strict'

const path = require('node:path')
const { declareSettings } = require('../../lib/shared/settings')
const { MONGO_SETTINGS, COUNTER_SETTINGS } = require('../../workers/mongo-settings')
const { MONGO_COLLECTOR_SETTINGS } = require('../mongo-settings')
const { DEVIATIONS } = require('./syntax')
const { DEFAULT_LENIENT } = require('./parser')

/**
 * The syslog collector's settings, declared once (see collectors/mongo-settings.js):
 * SyslogCollector, SyslogConfig, SyslogWorker and docs/collectors.md take them from
 * here. UDP by default; with `--protocol tcp_server` each connection's
 * framing (octet-counting or newline, RFC 6587) is detected per message.
 * 5514 by default since 514 needs root.
 */
module.exports = Object.freeze({
  defaults: Object.freeze({ name: 'syslog', protocol: 'udp', port: 5514, framing: 'auto', worker: path.join(__dirname, 'syslog-worker.js') }),
  master: MONGO_COLLECTOR_SETTINGS.master,
  worker: declareSettings({
    ...MONGO_SETTINGS,
    collection: { type: 'string', default: 'syslog', group: 'Storage', description: 'collection the messages are stored in' },
    lenient: { type: 'list', choices: () => DEVIATIONS, default: DEFAULT_LENIENT, group: 'Protocol', description: 'deviations from RFC 5424/3164 read anyway, flagged on the record and counted (the others are stored raw with their name as reason)' },
    strict: { type: 'boolean', default: false, group: 'Protocol', description: 'read no deviation at all (as --lenient with an empty list)' },
    maxBatch: { flag: false, type: 'integer', default: 1000, range: [1, 1e6], group: 'Storage', description: 'messages that trigger an early insertMany' },
    countersCollection: COUNTER_SETTINGS.countersCollection,
    preallocateRate: { ...COUNTER_SETTINGS.preallocateRate, default: 0.001 }
  })
})
