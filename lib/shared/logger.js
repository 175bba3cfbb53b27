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

/**
 * The index in LEVELS of the lowest level `logger` writes: LEVELS.length
 * for a silent logger, 0 when it does not say (everything is forwarded).
 */
function minLevel (logger) {
  const level = logger && logger.level
  if (level === 'silent') return LEVELS.length
  const index = LEVELS.indexOf(level)
  return index === -1 ? 0 : index
}

/** An expected error for a log line: type, code and message, no stack. */
function briefError (err) {
  if (!(err instanceof Error)) return { message: String(err) }
  return { type: err.name, code: err.code, message: err.message }
}

module.exports = { LEVELS, createNoopLogger, isLogger, minLevel, briefError }
