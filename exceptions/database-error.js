'use strict'
const CollectorError = require('./collector-error')

/** The database could not be reached or refused a write (credentials redacted). */
class DatabaseError extends CollectorError {
  constructor (message, props) {
    super(message, 'ERR_DATABASE', props)
  }
}

module.exports = DatabaseError
