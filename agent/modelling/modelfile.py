"""A fitted model in a persona file (spec 4.6 item 5): the file a fit writes
(``model_persona_toml``: the deep search's parameters and a ``[model]`` table), the model
read back from a loaded persona, once per persona object (``model_of``), and live columns
put in the order the model was fitted on (``align``).  The fit (``fast.py``) and the model
that plays (``agent.modelplay``) both read these, so they live below both."""
from __future__ import annotations

import numpy as np

from agent import tomlio

from . import choicemodel as CM
from . import shared_evaluations as E

_LOADED: dict = {}            # id(persona) -> (persona, ChoiceModel, plan)


def model_persona_toml(name: str, model: CM.ChoiceModel, plan: dict) -> str:
    """A persona file for a fitted model: the deep search's parameters (what ``limit``
    and the clock mean for it) and the model."""
    base = E.deep_persona(plan["limit"]).replace(
        name=name, kind="fitted",
        description=f"model fitted to {name} ({model.info.get('decisions', '?')} training decisions, "
                    f"fast fit, spec 4.6)")
    text = base.to_toml()
    return text + "\n" + tomlio.dumps({"model": {"plan": plan, "fit": model.to_dict()}})


def model_of(persona):
    """(ChoiceModel, plan) of a persona with a model (parsed once per persona object)."""
    hit = _LOADED.get(id(persona))
    if hit is not None and hit[0] is persona:
        return hit[1], hit[2]
    m = CM.ChoiceModel.from_dict(persona.model["fit"], persona.name)
    plan = dict(persona.model["plan"])
    _LOADED[id(persona)] = (persona, m, plan)
    return m, plan


def align(shared: np.ndarray, live_names: list, fitted_names: list) -> np.ndarray:
    """Live columns in the fitted order; a column the live game lacks (another rule sheet's
    relation) is 0."""
    if live_names == fitted_names:
        return shared
    pos = {n: i for i, n in enumerate(live_names)}
    out = np.zeros((shared.shape[0], len(fitted_names)), shared.dtype)
    for j, n in enumerate(fitted_names):
        i = pos.get(n)
        if i is not None:
            out[:, j] = shared[:, i]
    return out
