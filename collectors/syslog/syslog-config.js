'use strict'

const path = require('node:path')
const MongoCollectorConfig = require('../../configs/mongo-collector-config')
const { DEVIATIONS, DEFAULT_LENIENT } = require('./parser')

/**
 * Flags of the syslog collector. UDP by default; with `--protocol
 * tcp_server` each connection's framing (octet-counting or newline,
 * RFC 6587) is detected per message. 5514 by default since 514 needs root.
 */
class SyslogConfig extends MongoCollectorConfig {
  static usage = 'collector run syslog [options]'

  static flags = MongoCollectorConfig.extendFlags({
    port: { default: 5514 },
    name: { default: 'syslog' },
    framing: { default: 'auto' },
    workername: { required: false, default: path.join(__dirname, 'syslog-worker.js') },
    collection: { type: 'string', default: 'syslog', group: 'Storage', description: 'collection the messages are stored in' },
    lenient: { type: 'list', choices: DEVIATIONS, default: DEFAULT_LENIENT.join(','), group: 'Protocol', description: 'deviations from RFC 5424/3164 read anyway, flagged on the record and counted (the others are stored raw with their name as reason)' },
    strict: { type: 'boolean', default: false, group: 'Protocol', description: 'read no deviation at all (as --lenient with an empty list)' }
  })
}

SyslogConfig.WORKER_KEYS = [...MongoCollectorConfig.WORKER_KEYS, 'collection', 'lenient', 'strict']

module.exports = SyslogConfig
