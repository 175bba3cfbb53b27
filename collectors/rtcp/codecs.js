'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')

// Where the narrowband planning values come from: Ie from Table I.1, Bpl
// from Table I.3 (for the packet size given there) of ITU-T G.113 Appendix I
// (11/2007; later editions carry the same rows). Stored with each score
// (`ieSource`) beside the model that used them (e-model.js MODEL).
const G113_APPENDIX_I = 'ITU-T G.113 (11/2007) Appendix I: Ie Table I.1, Bpl Table I.3'

/**
 * E-model planning values per codec, declared once: the equipment
 * impairment factor Ie and the packet-loss robustness factor Bpl (`source`
 * names the table of each), the usual packet interval (`packetMs`: a
 * stream's own interval, from its SDP or reports, comes first, see
 * packet-time.js), and the
 * delay the codec adds to the mouth-to-ear path (`delayMs`): one packet of
 * audio plus the codec's look-ahead. RTCP does not say
 * which codec a call uses, so a collector is told (`--codec`); the default
 * is G.711 with packet-loss concealment, the common VoIP case. Only
 * narrowband codecs: no wideband (G.107.1) planning value could be sourced
 * for G.722 or Opus, and AMR-WB's depend on its mode (docs/call-quality.md,
 * Wideband codecs), so such a stream is scored on G.107 with `--codec`'s
 * values and says so (`codecSource: 'default'`).
 */
const CODECS = Object.freeze({
  'G.711': { Ie: 0, Bpl: 25.1, source: G113_APPENDIX_I, packetMs: 20, delayMs: 20, clockRate: 8000, description: 'G.711 (PCMA/PCMU) with packet-loss concealment (G.711 Appendix I)' },
  'G.711-noplc': { Ie: 0, Bpl: 4.3, source: G113_APPENDIX_I, packetMs: 20, delayMs: 20, clockRate: 8000, description: 'G.711 without concealment (lost packets replaced by silence)' },
  'G.729A': { Ie: 11, Bpl: 19.0, source: G113_APPENDIX_I, packetMs: 20, delayMs: 25, clockRate: 8000, description: 'G.729A with VAD, 20 ms packets (10 ms frames + 5 ms look-ahead)' },
  'G.723.1': { Ie: 15, Bpl: 16.1, source: G113_APPENDIX_I, packetMs: 30, delayMs: 37.5, clockRate: 8000, description: 'G.723.1 6.3 kbit/s with VAD, 30 ms packets (+ 7.5 ms look-ahead)' },
  'GSM-EFR': { Ie: 5, Bpl: 10.0, source: G113_APPENDIX_I, packetMs: 20, delayMs: 20, clockRate: 8000, description: 'GSM-EFR 12.2 kbit/s, 20 ms packets' }
})

const DEFAULT_CODEC = 'G.711'

// The planning codec of an SDP encoding name (a=rtpmap, RFC 3551 names),
// matched without case. Names without planning values here are scored with
// the collector's --codec and say so (codecSource 'default').
const SDP_ENCODINGS = Object.freeze({ pcmu: 'G.711', pcma: 'G.711', g729: 'G.729A', g723: 'G.723.1', 'gsm-efr': 'GSM-EFR' })

/** The planning codec name for SDP encoding `encoding`, or null. */
function codecOfEncoding (encoding) {
  const name = SDP_ENCODINGS[String(encoding).toLowerCase()]
  return name === undefined ? null : name
}

/** The planning values of codec `name`; InvalidOptionError naming the choices if there is none. */
function codecNamed (name = DEFAULT_CODEC) {
  if (!Object.hasOwn(CODECS, name)) throw new InvalidOptionError('codec', name, `must be one of ${Object.keys(CODECS).join(', ')}`)
  return CODECS[name]
}

module.exports = { CODECS, DEFAULT_CODEC, codecNamed, codecOfEncoding }
