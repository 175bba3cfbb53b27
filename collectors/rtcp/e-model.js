'use strict'

// The ITU-T G.107 E-model (06/2015): the transmission rating R of a
// connection from its impairments, and the MOS it predicts. Equation
// numbers are G.107's. Every parameter not given takes the standard's
// default (G.107 Table 1); a VoIP collector knows only the packet-level
// ones (Ie, Bpl, Ppl, BurstR) and the delays (T, Ta, Tr).

const LG = Math.log10
/** The model every score here is from, named beside each MOS stored (its scale: G.107 Annex B). */
const MODEL = 'G.107'

/** G.107 Table 1: default values (dB, ms, dBm0p, dB(A)). */
const DEFAULTS = Object.freeze({
  SLR: 8, RLR: 2, STMR: 15, LSTR: 18, Ds: 3, Dr: 3, TELR: 65, WEPL: 110,
  T: 0, Tr: 0, Ta: 0, qdu: 1, Ie: 0, Bpl: 1, Ppl: 0, BurstR: 1,
  Nc: -70, Nfor: -64, Ps: 35, Pr: 35, A: 0, mT: 100, sT: 1
})

/** Basic signal-to-noise ratio Ro and the noise sum No (7-3 to 7-8). */
function basicSignalToNoise (p) {
  const OLR = p.SLR + p.RLR
  const Nos = p.Ps - p.SLR - p.Ds - 100 + 0.004 * (p.Ps - OLR - p.Ds - 14) ** 2
  const Pre = p.Pr + 10 * LG(1 + 10 ** ((10 - p.LSTR) / 10))
  const Nor = p.RLR - 121 + Pre + 0.008 * (Pre - 35) ** 2
  const Nfo = p.Nfor + p.RLR
  const No = 10 * LG(10 ** (p.Nc / 10) + 10 ** (Nos / 10) + 10 ** (Nor / 10) + 10 ** (Nfo / 10))
  return { Ro: 15 - 1.5 * (p.SLR + No), No, OLR }
}

/** Simultaneous impairment Is = Iolr + Ist + Iq (7-9 to 7-19). */
function simultaneousImpairment (p, Ro, No, OLR) {
  return loudnessImpairment(p, No, OLR) + sidetoneImpairment(p) + quantizingImpairment(p, Ro)
}

/** Iolr (7-9, 7-10): too low an overall loudness. */
function loudnessImpairment (p, No, OLR) {
  const Xolr = OLR + 0.2 * (64 + No - p.RLR)
  return 20 * ((1 + (Xolr / 8) ** 8) ** (1 / 8) - Xolr / 8)
}

/** Ist (7-11, 7-12): non-optimum sidetone; through STMRo it depends on T. */
function sidetoneImpairment (p) {
  const STMRo = -10 * LG(10 ** (-p.STMR / 10) + Math.exp(-p.T / 4) * 10 ** (-p.TELR / 10))
  return 12 * (1 + ((STMRo - 13) / 6) ** 8) ** (1 / 8) -
    28 * (1 + ((STMRo + 1) / 19.4) ** 35) ** (1 / 35) -
    13 * (1 + ((STMRo - 3) / 33) ** 13) ** (1 / 13) + 29
}

/** Iq (7-13 to 7-17): quantizing distortion. */
function quantizingImpairment (p, Ro) {
  const Q = 37 - 15 * LG(p.qdu)
  const G = 1.07 + 0.258 * Q + 0.0602 * Q * Q
  const Y = (Ro - 100) / 15 + 46 / 8.4 - G / 9
  const Z = 46 / 30 - G / 40
  return 15 * LG(1 + 10 ** Y + 10 ** Z)
}

/** Delay impairment Id = Idte + Idle + Idd (7-20 to 7-28). */
function delayImpairment (p, Ro, No) {
  const { T, Ta, Tr } = p
  const Roe = -1.5 * (No - p.RLR)
  let TERV = p.TELR - 40 * LG((1 + T / 10) / (1 + T / 150)) + 6 * Math.exp(-0.3 * T * T)
  if (p.STMR < 9) TERV += sidetoneImpairment(p) / 2 // (7-23): TERVs, low sidetone
  const Re = 80 + 2.5 * (TERV - 14)
  const Idte = ((Roe - Re) / 2 + Math.sqrt((Roe - Re) ** 2 / 4 + 100) - 1) * (1 - Math.exp(-T))
  const Rle = 10.5 * (p.WEPL + 7) * (Tr + 1) ** -0.25
  const Idle = (Ro - Rle) / 2 + Math.sqrt((Ro - Rle) ** 2 / 4 + 169)
  let Idd = 0
  if (Ta > p.mT) {
    const X = LG(Ta / p.mT) / LG(2)
    const s = 6 * p.sT
    Idd = 25 * ((1 + X ** s) ** (1 / s) - 3 * (1 + (X / 3) ** s) ** (1 / s) + 2)
  }
  return Idte + Idle + Idd
}

/** Effective equipment impairment with random or bursty packet loss (7-29). */
function effectiveEquipmentImpairment ({ Ie, Bpl, Ppl, BurstR }) {
  return Ie + (95 - Ie) * Ppl / (Ppl / BurstR + Bpl)
}

// Ro depends on none of the inputs a collector varies: worked out once.
const BASE = basicSignalToNoise(DEFAULTS)

/**
 * The transmission rating R (7-1): R = Ro − Is − Id − Ie,eff + A.
 *
 * @param {object} inputs G.107 parameters by name; absent ones default.
 *   Ppl is the packet-loss probability in percent, T/Ta/Tr in ms.
 * @returns {number}
 */
function rFactor (inputs) {
  const p = { ...DEFAULTS, ...inputs }
  const base = sameBase(inputs) ? BASE : basicSignalToNoise(p)
  const Is = simultaneousImpairment(p, base.Ro, base.No, base.OLR)
  const Id = delayImpairment(p, base.Ro, base.No)
  return base.Ro - Is - Id - effectiveEquipmentImpairment(p) + p.A
}

// What a collector varies (a codec's Ie and Bpl, the loss, the delays);
// every other parameter at its default, so Ro, Iolr and Iq are constants.
// The same terms as rFactor, without its copy of the parameters: once per
// report.
const VOIP = { ...DEFAULTS }
const VOIP_IOLR = loudnessImpairment(DEFAULTS, BASE.No, BASE.OLR)
const VOIP_IQ = quantizingImpairment(DEFAULTS, BASE.Ro)

/** rFactor({ Ie, Bpl, Ppl, BurstR, T, Ta, Tr }) with every other parameter at its default. */
function voipRFactor (Ie, Bpl, Ppl, BurstR, T, Ta, Tr) {
  const p = VOIP
  p.Ie = Ie
  p.Bpl = Bpl
  p.Ppl = Ppl
  p.BurstR = BurstR
  p.T = T
  p.Ta = Ta
  p.Tr = Tr
  const Is = VOIP_IOLR + sidetoneImpairment(p) + VOIP_IQ
  return BASE.Ro - Is - delayImpairment(p, BASE.Ro, BASE.No) - effectiveEquipmentImpairment(p) + p.A
}

// Whether Ro/No/OLR can be the precomputed defaults: no parameter they depend on was given.
function sameBase (inputs) {
  for (const key of ['SLR', 'RLR', 'LSTR', 'Ds', 'Nc', 'Nfor', 'Ps', 'Pr']) if (inputs[key] !== undefined) return false
  return true
}

/** MOS (conversational quality, estimated) from R (G.107 Annex B, B-4). */
function mosFromR (R) {
  if (!(R > 0)) return 1
  if (R >= 100) return 4.5
  return 1 + 0.035 * R + R * (R - 60) * (100 - R) * 7e-6
}

module.exports = { rFactor, voipRFactor, mosFromR, DEFAULTS, MODEL }
