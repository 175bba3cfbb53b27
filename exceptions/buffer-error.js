'use strict'
const CollectorError = require('./collector-error')

/**
 * The disk buffer cannot be used: its directory cannot be created or
 * written, or another live process holds it (two collectors must not share
 * one buffer directory). Code ERR_BUFFER; `dir` names the directory.
 */
class BufferError extends CollectorError {
  constructor (dir, reason, cause) {
    super(`disk buffer ${dir}: ${reason}`, 'ERR_BUFFER', { dir, ...(cause ? { cause } : {}) })
  }
}

module.exports = BufferError
