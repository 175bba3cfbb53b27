'use strict'

const MongoCollectorConfig = require('../mongo-collector-config')
const HEP_SETTINGS = require('./hep-settings')

/** Flags of the HEP collector: the base ones with HEP defaults, plus its settings (hep-settings.js). */
class HepConfig extends MongoCollectorConfig {
  static usage = 'collector run hep [options]'

  static flags = MongoCollectorConfig.extendFlags(MongoCollectorConfig.settingsFlags(HEP_SETTINGS))
}

module.exports = HepConfig
