'use strict'

const path = require('node:path')
const { declareSettings } = require('../../lib/shared/settings')
const RTCP_SETTINGS = require('../rtcp').Collector.settings

/**
 * The HEP collector's settings, declared once (see collectors/mongo-settings.js):
 * HepCollector, HepConfig, HepWorker and docs/collectors.md take them from here.
 * The RTCP collector's worker settings apply to the RTCP it carries.
 */
module.exports = Object.freeze({
  defaults: Object.freeze({ name: 'hep', protocol: 'udp', port: 9060, framing: 'hep', maxFrameBytes: 65535, distribution: 'hash', worker: path.join(__dirname, 'hep-worker.js') }),
  master: RTCP_SETTINGS.master,
  worker: declareSettings({
    ...RTCP_SETTINGS.worker,
    hepPasswordFile: { type: 'path', group: 'HEP', description: 'file holding the HEP auth key (chunk 0x0e) agents must send: packets without it or with another are dropped (dropped.hep-auth); also COLLECTOR_HEP_PASSWORD; never on the command line' },
    callsCollection: { flag: false, type: 'string', default: 'calls', group: 'Storage', description: 'collection of the SIP calls' }
  })
})
