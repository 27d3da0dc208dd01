"""Kind lookups and config parses of one embedded call's system, from the study's row to the built system
(CallManager.room_for, then build_system), counted around the calls: run in a checkout of the code
before SystemSpec and in one after (COLD=1: the parse cache emptied first). A one-off probe."""
import sys, os
sys.path.insert(0, os.getcwd())
import tempfile
from studies.systems import kinds
from studies.systems.cascaded import CascadedSettings, load_components
from studies.call_manager import CallManager

class Counting(dict):
    lookups = 0
    def get(self, *a):
        Counting.lookups += 1
        return super().get(*a)
kinds._BY_NAME = Counting(kinds._BY_NAME)
parses = [0]
original = CascadedSettings.from_config.__func__
CascadedSettings.from_config = classmethod(lambda cls, config: (parses.__setitem__(0, parses[0] + 1), original(cls, config))[1])
calls = CallManager(engine=None, data_root=tempfile.mkdtemp())
config = {"barge_in": "yield"}
calls.cascade_components({}, loaded=load_components(CascadedSettings()))
calls.cascade_components(config, loaded=calls.cascade_components({}))
Counting.lookups, parses[0] = 0, 0
if hasattr(kinds, "_parsed") and os.environ.get("COLD"):
    kinds._parsed.cache_clear()
modules_before = set(sys.modules)
if hasattr(kinds, "system_spec"):  # after: the request's row -> spec, then the slot and the system
    spec = kinds.system_spec("cascaded", dict(config))
    calls.room_for(1, spec)
    system = calls.build_system(spec)
else:
    calls.room_for(1, "cascaded", dict(config))
    system = calls.build_system("cascaded", dict(config))
print(type(system).__name__, "kind lookups:", Counting.lookups, "config parses:", parses[0])
