--[[ keys: the key names a step only learns while it runs (the id a take pops, the
dependents a completion releases, the follow-ups it creates), and the few a step needs
only on a rare path (done:<id> when a waiter marked the job, canceling when a cancel was
asked: passing them costs every call ~1,150 Redis instructions a key), completed from the namespace
prefix NS ("{ns}:", a hash tag) so every key stays in the step's cluster slot. The patterns
mirror rqconc/store/keys.py (KeySpace); tests/store/test_lua_steps.py
(test_key_names_built_inside_lua_match_keyspace) checks that they agree.
]]
--#needs NS

local function job_key(id) return NS .. 'job:' .. id end
local function queue_key(name) return NS .. 'q:' .. name end
local function marker_key(name) return NS .. 'marker:' .. name end
local function scheduled_key(name) return NS .. 'scheduled:' .. name end
local function started_key(name) return NS .. 'started:' .. name end
local function deferred_key(name) return NS .. 'deferred:' .. name end
local function done_key(id) return NS .. 'done:' .. id end
local function dependents_key(id) return NS .. 'dependents:' .. id end
local function log_key(id) return NS .. 'log:' .. id end
--#cold
local function group_key(id) return NS .. 'group:' .. id end
--#cold
local function canceling_key() return NS .. 'canceling' end
