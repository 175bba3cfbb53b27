#!/usr/bin/env python3
"""Independent oracle for the ITU-T G.107 E-model (narrowband), 06/2015 edition.

Written from the text of Recommendation ITU-T G.107 (06/2015), clause 7
("Structure and basic algorithms of the E-model") and Annex B. Equation
numbers in the comments are the ones used by that edition. Python 3 stdlib only.

Protocol
--------
stdin : JSON lines, one object per line. Keys are optional G.107 parameter
        names (see DEFAULTS). Unknown keys are an error, so a mistyped name
        does not quietly fall back to the default. A key "id" is copied to the
        output unchanged. Blank lines are skipped.
stdout: one JSON line per input line:
        {"R":..,"MOS":..,"Ro":..,"Is":..,"Id":..,"Idte":..,"Idle":..,
         "Idd":..,"Ieeff":..}
        or {"error": "..."} if the line cannot be evaluated.

Units are the ones G.107 uses: loudness ratings in dB, noise in dBm0p / dBmp,
room noise in dB(A), delays T/Ta/Tr/mT in ms, Ppl in PERCENT (0..100).

Run `python3 emodel.py --self-test` to check the defaults against the
standard (R = 93.2) before using the oracle.
"""

import json
import math
import sys

# G.107 (06/2015) Table 3 - default values, and Table 1 - "Default" delay
# sensitivity class (mT = 100 ms, sT = 1).
DEFAULTS = {
    "SLR": 8.0,      # send loudness rating, dB
    "RLR": 2.0,      # receive loudness rating, dB
    "STMR": 15.0,    # sidetone masking rating, dB
    "LSTR": 18.0,    # listener sidetone rating, dB (= STMR + Dr, see below)
    "Ds": 3.0,       # D-value of telephone, send side
    "Dr": 3.0,       # D-value of telephone, receive side
    "TELR": 65.0,    # talker echo loudness rating, dB
    "WEPL": 110.0,   # weighted echo path loss, dB
    "T": 0.0,        # mean one-way delay of the echo path, ms
    "Tr": 0.0,       # round-trip delay in a 4-wire loop, ms
    "Ta": 0.0,       # absolute delay in echo-free connections, ms
    "qdu": 1.0,      # number of quantization distortion units
    "Ie": 0.0,       # equipment impairment factor
    "Bpl": 4.3,      # packet-loss robustness factor
    "Ppl": 0.0,      # random packet-loss probability, %
    "BurstR": 1.0,   # burst ratio
    "Nc": -70.0,     # circuit noise referred to 0 dBr-point, dBm0p
    "Nfor": -64.0,   # noise floor at the receive side, dBmp
    "Ps": 35.0,      # room noise at the send side, dB(A)
    "Pr": 35.0,      # room noise at the receive side, dB(A)
    "A": 0.0,        # advantage factor
    "mT": 100.0,     # minimum perceivable delay, ms (Table 1)
    "sT": 1.0,       # delay sensitivity (Table 1)
}

OUTPUT_KEYS = ("R", "MOS", "Ro", "Is", "Id", "Idte", "Idle", "Idd", "Ieeff")


def lg(x):
    """Decimal logarithm, written 'lg' in G.107."""
    return math.log10(x)


def resolve_params(inp):
    """Merge an input object with the Table 3 defaults."""
    if not isinstance(inp, dict):
        raise ValueError("input line is not a JSON object")
    p = dict(DEFAULTS)
    for k, v in inp.items():
        if k == "id":
            continue
        if k not in DEFAULTS:
            raise ValueError("unknown parameter %r" % k)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError("parameter %r must be a number" % k)
        v = float(v)
        if not math.isfinite(v):
            raise ValueError("parameter %r must be finite" % k)
        p[k] = v
    # Table 3 gives LSTR = STMR + Dr (18 = 15 + 3). When LSTR is not given
    # but STMR or Dr is, keep that relation instead of the fixed 18 dB.
    if "LSTR" not in inp and ("STMR" in inp or "Dr" in inp):
        p["LSTR"] = p["STMR"] + p["Dr"]
    return p


def emodel(inp):
    """Evaluate the full G.107 E-model. Returns a dict with OUTPUT_KEYS."""
    p = resolve_params(inp)
    SLR, RLR, STMR, LSTR = p["SLR"], p["RLR"], p["STMR"], p["LSTR"]
    Ds, TELR, WEPL = p["Ds"], p["TELR"], p["WEPL"]
    T, Tr, Ta = p["T"], p["Tr"], p["Ta"]
    qdu, Ie, Bpl, Ppl, BurstR = p["qdu"], p["Ie"], p["Bpl"], p["Ppl"], p["BurstR"]
    Nc, Nfor, Ps, Pr, A = p["Nc"], p["Nfor"], p["Ps"], p["Pr"], p["A"]
    mT, sT = p["mT"], p["sT"]

    # ---- 7.2 Basic signal-to-noise ratio Ro --------------------------------
    OLR = SLR + RLR                                   # overall loudness rating
    # (7-4) equivalent circuit noise caused by room noise at the send side
    Nos = Ps - SLR - Ds - 100.0 + 0.004 * (Ps - OLR - Ds - 14.0) ** 2
    # (7-6) room noise at receive side enhanced by the listener sidetone path
    Pre = Pr + 10.0 * lg(1.0 + 10.0 ** ((10.0 - LSTR) / 10.0))
    # (7-5) equivalent circuit noise caused by room noise at the receive side
    Nor = RLR - 121.0 + Pre + 0.008 * (Pre - 35.0) ** 2
    # (7-7) noise floor at the receive side referred to the 0 dBr point
    Nfo = Nfor + RLR
    # (7-3) power addition of the four noise sources, dBm0p
    No = 10.0 * lg(10.0 ** (Nc / 10.0) + 10.0 ** (Nos / 10.0)
                   + 10.0 ** (Nor / 10.0) + 10.0 ** (Nfo / 10.0))
    # (7-2)
    Ro = 15.0 - 1.5 * (SLR + No)

    # ---- 7.3 Simultaneous impairment factor Is ----------------------------
    # (7-10) and (7-9): too low overall loudness rating
    Xolr = OLR + 0.2 * (64.0 + No - RLR)
    Iolr = 20.0 * ((1.0 + (Xolr / 8.0) ** 8) ** (1.0 / 8.0) - Xolr / 8.0)
    # (7-12) STMR including the talker echo reaching the ear early
    STMRo = -10.0 * lg(10.0 ** (-STMR / 10.0)
                       + math.exp(-T / 4.0) * 10.0 ** (-TELR / 10.0))
    # (7-11) non-optimum sidetone
    Ist = (12.0 * (1.0 + ((STMRo - 13.0) / 6.0) ** 8) ** (1.0 / 8.0)
           - 28.0 * (1.0 + ((STMRo + 1.0) / 19.4) ** 35) ** (1.0 / 35.0)
           - 13.0 * (1.0 + ((STMRo - 3.0) / 33.0) ** 13) ** (1.0 / 13.0)
           + 29.0)
    # (7-17) .. (7-14) and (7-13): quantizing distortion. qdu below 1 is taken
    # as 1 (Table 3 range starts at 1; lg(qdu) must stay >= 0).
    Q = 37.0 - 15.0 * lg(max(qdu, 1.0))               # (7-17)
    G = 1.07 + 0.258 * Q + 0.0602 * Q ** 2            # (7-16)
    Z = 46.0 / 30.0 - G / 40.0                        # (7-15)
    Y = (Ro - 100.0) / 15.0 + 46.0 / 8.4 - G / 9.0    # (7-14)
    Iq = 15.0 * lg(1.0 + 10.0 ** Y + 10.0 ** Z)       # (7-13)
    Is = Iolr + Ist + Iq                              # (7-8)

    # ---- 7.4 Delay impairment factor Id -----------------------------------
    # Talker echo
    Roe = -1.5 * (No - RLR)                           # (7-20)
    TERV = (TELR - 40.0 * lg((1.0 + T / 10.0) / (1.0 + T / 150.0))
            + 6.0 * math.exp(-0.3 * T ** 2))          # (7-22)
    if STMR < 9.0:
        TERV = TERV + Ist / 2.0                       # (7-23) TERVs
    Re = 80.0 + 2.5 * (TERV - 14.0)                   # (7-21)
    if T < 1.0:
        # 7.4: for T < 1 ms the talker echo is perceived as sidetone: Idte = 0
        Idte = 0.0
    else:
        Idte = (((Roe - Re) / 2.0 + math.sqrt((Roe - Re) ** 2 / 4.0 + 100.0)
                 - 1.0) * (1.0 - math.exp(-T)))       # (7-19)
        if STMR > 20.0:
            Idte = math.sqrt(Idte ** 2 + Ist ** 2)    # (7-24) Idtes
    # Listener echo
    Rle = 10.5 * (WEPL + 7.0) * (Tr + 1.0) ** -0.25   # (7-26)
    Idle = (Ro - Rle) / 2.0 + math.sqrt((Ro - Rle) ** 2 / 4.0 + 169.0)  # (7-25)
    # Too-long absolute delay
    if Ta <= mT:
        Idd = 0.0                                     # (7-27), Ta <= mT
    else:
        X = lg(Ta / mT) / lg(2.0)                     # (7-28)
        e = 6.0 * sT
        Idd = 25.0 * ((1.0 + X ** e) ** (1.0 / e)
                      - 3.0 * (1.0 + (X / 3.0) ** e) ** (1.0 / e) + 2.0)  # (7-27)
    Id = Idte + Idle + Idd                            # (7-18)

    # ---- 7.5 Effective equipment impairment factor ------------------------
    if Ppl == 0.0:
        Ieeff = Ie            # limit of (7-29); avoids 0/0 when Bpl is 0
    else:
        Ieeff = Ie + (95.0 - Ie) * Ppl / (Ppl / BurstR + Bpl)      # (7-29)

    # ---- 7.1 Transmission rating factor -----------------------------------
    R = Ro - Is - Id - Ieeff + A                      # (7-1)

    return {"R": R, "MOS": mos_from_r(R), "Ro": Ro, "Is": Is, "Id": Id,
            "Idte": Idte, "Idle": Idle, "Idd": Idd, "Ieeff": Ieeff}


def mos_from_r(R):
    """G.107 Annex B, equation (B-4): R -> MOS_CQE."""
    if R < 0.0:
        return 1.0
    if R > 100.0:
        return 4.5
    return 1.0 + 0.035 * R + R * (R - 60.0) * (100.0 - R) * 7.0e-6


def process_stream(fin, fout):
    for line in fin:
        if not line.strip():
            continue
        try:
            inp = json.loads(line)
            out = emodel(inp)
            if isinstance(inp, dict) and "id" in inp:
                out = dict(out, id=inp["id"])
        except (ValueError, ZeroDivisionError, OverflowError) as exc:
            out = {"error": str(exc)}
        fout.write(json.dumps(out) + "\n")
        fout.flush()


def ieeff(Ie, Bpl, Ppl, BurstR=1.0):
    return emodel({"Ie": Ie, "Bpl": Bpl, "Ppl": Ppl, "BurstR": BurstR})["Ieeff"]


def self_test():
    failures = 0

    def check(name, got, want, tol, hard=True):
        nonlocal failures
        ok = abs(got - want) <= tol
        tag = "ok  " if ok else ("FAIL" if hard else "info")
        if not ok and hard:
            failures += 1
        print("%s %-58s got %.6f want %.4g +/- %g" % (tag, name, got, want, tol))

    d = emodel({})
    # G.107 7.7: with all parameters at their defaults R = 93.2.
    check("defaults: R (G.107 7.7 says 93.2)", d["R"], 93.2, 0.05)
    # Values commonly quoted for the default connection (Ro 94.77, Is 1.41,
    # Id 0.15 from Idle alone).
    check("defaults: Ro", d["Ro"], 94.77, 0.005)
    check("defaults: Is", d["Is"], 1.41, 0.005)
    check("defaults: Idte (T = 0 < 1 ms)", d["Idte"], 0.0, 0.0)
    check("defaults: Idd (Ta = 0 <= mT)", d["Idd"], 0.0, 0.0)
    check("defaults: Idle", d["Idle"], 0.15, 0.005)
    check("defaults: Ieeff", d["Ieeff"], 0.0, 0.0)
    # Annex B (B-4) end points and midpoint.
    check("MOS(R=0) = 1", mos_from_r(0.0), 1.0, 1e-12)
    check("MOS(R=100) = 4.5", mos_from_r(100.0), 4.5, 1e-12)
    check("MOS(R=-5) = 1", mos_from_r(-5.0), 1.0, 0.0)
    check("MOS(R=120) = 4.5", mos_from_r(120.0), 4.5, 0.0)
    check("MOS(R=50) = 1 + 1.75 - 0.175", mos_from_r(50.0), 2.575, 1e-12)
    # (7-29) exact by hand: Ie=11, Bpl=19, Ppl=2 -> 11 + 84*2/21 = 19.
    check("Ieeff(Ie=11,Bpl=19,Ppl=2) = 19 exactly", ieeff(11, 19, 2), 19.0, 1e-12)
    # BurstR = 2, Ppl = 5, Bpl = 25.1 -> 95*5/(2.5+25.1)
    check("Ieeff(Ie=0,Bpl=25.1,Ppl=5,BurstR=2)", ieeff(0, 25.1, 5, 2),
          95.0 * 5.0 / 27.6, 1e-12)
    # Idd: X = 1 at Ta = 2*mT -> 25*((2)^(1/6) - 3*(1+(1/3)^6)^(1/6) + 2)
    x = 25.0 * (2.0 ** (1 / 6.0) - 3.0 * (1.0 + (1 / 3.0) ** 6) ** (1 / 6.0) + 2.0)
    check("Idd(Ta=200) closed form", emodel({"Ta": 200})["Idd"], x, 1e-12)

    # Informational: Bpl from G.113 Table I.3 against the Ie-under-loss
    # planning values of G.113 (02/2001) Table I.2 (rounded integers).
    print("-- informational: (7-29) vs G.113 (02/2001) Table I.2 Ie under loss")
    for name, ie, bpl, pts in (
        ("G.729A+VAD", 11, 19.0, [(2, 19), (4, 26), (8, 36), (16, 49)]),
        ("G.723.1+VAD 6.3k", 15, 16.1, [(2, 24), (4, 32), (8, 41), (16, 55)]),
        ("GSM-EFR", 5, 10.0, [(2, 21), (3, 26), (5, 33)]),
        ("G.711 + PLC", 0, 25.1, [(2, 7), (5, 15), (10, 25)]),
    ):
        for ppl, want in pts:
            check("%s Ppl=%g%%" % (name, ppl), ieeff(ie, bpl, ppl), want, 1.5,
                  hard=False)

    print("self-test: %s" % ("PASS" if failures == 0 else "%d FAILURE(S)" % failures))
    return 0 if failures == 0 else 1


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    if len(argv) > 1:
        sys.stderr.write("usage: emodel.py [--self-test] < input.jsonl\n")
        return 2
    process_stream(sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
