'use strict'

module.exports = {
  CollectorError: require('./collector-error'),
  InvalidConfigError: require('./invalid-config-error'),
  InvalidOptionError: require('./invalid-option-error'),
  WorkerDownError: require('./worker-down-error'),
  DecodeError: require('./decode-error'),
  DatabaseError: require('./database-error'),
  ListenError: require('./listen-error'),
  WebConfigError: require('./web-config-error'),
  BufferError: require('./buffer-error')
}
