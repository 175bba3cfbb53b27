'use strict'

/**
 * Base class of every error the library raises on purpose. `code` is stable
 * and documented (see docs/errors.md); messages name the bad value.
 */
class CollectorError extends Error {
  constructor (message, code, props) {
    super(message)
    this.name = this.constructor.name
    this.code = code
    if (props) Object.assign(this, props)
  }
}

module.exports = CollectorError
