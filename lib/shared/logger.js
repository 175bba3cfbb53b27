'use strict'

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal']

function noop () {}

/** A pino-compatible logger that discards everything (the default). */
function createNoopLogger () {
  const logger = { child: () => logger, level: 'silent' }
  for (const level of LEVELS) logger[level] = noop
  return logger
}

/** Checks that `logger` has the methods the library calls. */
function isLogger (logger) {
  return logger !== null && typeof logger === 'object' &&
    LEVELS.every((level) => typeof logger[level] === 'function')
}

module.exports = { LEVELS, createNoopLogger, isLogger }
