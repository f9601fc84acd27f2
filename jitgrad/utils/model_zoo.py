"""``torch.utils.model_zoo``: ``load_url`` (``jitgrad.hub.load_state_dict_from_url``)."""

from ..hub import load_state_dict_from_url as load_url
from ..hub import tqdm

__all__ = ["load_url", "tqdm"]
