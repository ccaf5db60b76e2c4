"""Wire formats: frames, entries, GOSET, WANT/CHNK vectors, BIPF, KISS and LoRa plans."""

from .. import accel as _accel

__path__ = _accel.extend(__path__, __name__)  # compiled modules first, when current
