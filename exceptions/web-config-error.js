'use strict'
const InvalidOptionError = require('./invalid-option-error')

/**
 * The file named by `metricsWebConfig` (TLS and basic auth of the metrics
 * endpoint) cannot be used: missing, not YAML, an unknown key, a certificate
 * that cannot be read, a hash that is not bcrypt. `detail` says what, in one
 * line, without the secret values; `file` is the file's absolute path. An
 * InvalidOptionError (option `metricsWebConfig`) with a code of its own.
 */
class WebConfigError extends InvalidOptionError {
  constructor (file, detail) {
    super('metricsWebConfig', file, detail)
    this.code = 'ERR_WEB_CONFIG'
    this.message = `metrics web config ${file}: ${detail}`
    this.file = file
    this.detail = detail
  }
}

module.exports = WebConfigError
