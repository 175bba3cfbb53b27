'use strict'

const MongoCollector = require('../mongo-collector')
const MongoCollectorConfig = require('../mongo-collector-config')

/** The master of a definition: a MongoCollector with its settings, and its key() when it declares one. */
function definedCollector (definition, settings) {
  const Collector = class extends MongoCollector {
    static settings = settings
  }
  if (definition.key) {
    // The definition's key (a string is hashed, an integer mixed); null or undefined: the sender's.
    Collector.prototype.key = function key (message) {
      const k = definition.key(message)
      return k === null || k === undefined ? MongoCollector.prototype.key.call(this, message) : k
    }
  }
  Object.defineProperty(Collector, 'name', { value: className(definition.name, 'Collector') })
  return Collector
}

/** Its flags: the base ones with the definition's defaults, plus its settings. */
function definedConfig (definition, settings) {
  const Config = class extends MongoCollectorConfig {
    static usage = definition.usage || `collector run ${definition.name} [options]`
    static flags = MongoCollectorConfig.extendFlags(MongoCollectorConfig.settingsFlags(settings))
  }
  Object.defineProperty(Config, 'name', { value: className(definition.name, 'Config') })
  return Config
}

function className (name, kind) {
  return name.replace(/(^|[^A-Za-z0-9])([A-Za-z0-9])/g, (_, __, c) => c.toUpperCase()) + kind
}

module.exports = { definedCollector, definedConfig }
