"""What drives episodes: an episode's specification (``spec``: the one place that builds a cell's
parameters), its setup (``setup``: templates, embedder, limits and prices, resolved once for play,
campaigns and the inspect task, and where the episode is recorded), the runner (one episode,
recorded step by step), campaigns (a suite's grid) and their state (``cells``: each run's and
each cell's, for `suite status`, the viewer and resume), replay and re-simulation, re-judging
and the control experiment, limits and prices, and the episode export format (``golden``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inquitree import lazy_exports

if TYPE_CHECKING:  # the names as the type checker reads them; at run time each is loaded on first use
    from inquitree.core.run.campaign import HALT_AFTER as HALT_AFTER
    from inquitree.core.run.campaign import CampaignInterrupted as CampaignInterrupted
    from inquitree.core.run.campaign import Suite as Suite
    from inquitree.core.run.campaign import campaign_scores as campaign_scores
    from inquitree.core.run.campaign import parse_shard as parse_shard
    from inquitree.core.run.campaign import run_suite as run_suite
    from inquitree.core.run.campaign import set_up as set_up
    from inquitree.core.run.cells import CELL_EVENTS as CELL_EVENTS
    from inquitree.core.run.cells import MOST_DONE as MOST_DONE
    from inquitree.core.run.cells import STALE_SECONDS as STALE_SECONDS
    from inquitree.core.run.cells import STATE_EVENTS as STATE_EVENTS
    from inquitree.core.run.cells import STATES as STATES
    from inquitree.core.run.cells import CellFold as CellFold
    from inquitree.core.run.cells import RunState as RunState
    from inquitree.core.run.cells import cell_note as cell_note
    from inquitree.core.run.cells import cell_state as cell_state
    from inquitree.core.run.cells import fold_cell as fold_cell
    from inquitree.core.run.cells import fold_run as fold_run
    from inquitree.core.run.cells import recorded_cells as recorded_cells
    from inquitree.core.run.cells import recorded_runs as recorded_runs
    from inquitree.core.run.cells import run_status as run_status
    from inquitree.core.run.cells import share_done as share_done
    from inquitree.core.run.golden import MAX_CAMPAIGN_BYTES as MAX_CAMPAIGN_BYTES
    from inquitree.core.run.golden import MAX_IMPORT_BYTES as MAX_IMPORT_BYTES
    from inquitree.core.run.golden import check_manifest as check_manifest
    from inquitree.core.run.golden import dump_campaign as dump_campaign
    from inquitree.core.run.golden import dump_export as dump_export
    from inquitree.core.run.golden import dump_jsonl as dump_jsonl
    from inquitree.core.run.golden import load_export as load_export
    from inquitree.core.run.golden import split_campaign as split_campaign
    from inquitree.core.run.limits import LimitError as LimitError
    from inquitree.core.run.limits import Limits as Limits
    from inquitree.core.run.limits import PriceTable as PriceTable
    from inquitree.core.run.limits import prices_path as prices_path
    from inquitree.core.run.limits import tokens_of as tokens_of
    from inquitree.core.run.rejudge import finished_episodes as finished_episodes
    from inquitree.core.run.rejudge import judge_episode as judge_episode
    from inquitree.core.run.rejudge import run_control as run_control
    from inquitree.core.run.replay import resimulate as resimulate
    from inquitree.core.run.runner import STREAM_PREFIX as STREAM_PREFIX
    from inquitree.core.run.runner import Episode as Episode
    from inquitree.core.run.runner import EpisodeFailure as EpisodeFailure
    from inquitree.core.run.runner import cosines as cosines
    from inquitree.core.run.runner import new_episode_id as new_episode_id
    from inquitree.core.run.runner import run_episode as run_episode
    from inquitree.core.run.runner import stream_id as stream_id
    from inquitree.core.run.setup import EpisodeSetup as EpisodeSetup
    from inquitree.core.run.setup import Recording as Recording
    from inquitree.core.run.spec import EPISODE_OPTIONS as EPISODE_OPTIONS
    from inquitree.core.run.spec import MAX_HINTS as MAX_HINTS
    from inquitree.core.run.spec import MAX_REASKS as MAX_REASKS
    from inquitree.core.run.spec import EpisodeOption as EpisodeOption
    from inquitree.core.run.spec import EpisodeSpec as EpisodeSpec
    from inquitree.core.run.spec import OptionError as OptionError
    from inquitree.core.run.spec import episode_values as episode_values

_EXPORTS = {
    "CampaignInterrupted": "campaign",
    "HALT_AFTER": "campaign",
    "Suite": "campaign",
    "campaign_scores": "campaign",
    "parse_shard": "campaign",
    "run_suite": "campaign",
    "set_up": "campaign",
    "CELL_EVENTS": "cells",
    "MOST_DONE": "cells",
    "STALE_SECONDS": "cells",
    "STATE_EVENTS": "cells",
    "STATES": "cells",
    "CellFold": "cells",
    "RunState": "cells",
    "cell_note": "cells",
    "cell_state": "cells",
    "fold_cell": "cells",
    "fold_run": "cells",
    "recorded_cells": "cells",
    "recorded_runs": "cells",
    "run_status": "cells",
    "share_done": "cells",
    "MAX_CAMPAIGN_BYTES": "golden",
    "MAX_IMPORT_BYTES": "golden",
    "check_manifest": "golden",
    "dump_campaign": "golden",
    "dump_export": "golden",
    "dump_jsonl": "golden",
    "load_export": "golden",
    "split_campaign": "golden",
    "LimitError": "limits",
    "Limits": "limits",
    "PriceTable": "limits",
    "prices_path": "limits",
    "tokens_of": "limits",
    "finished_episodes": "rejudge",
    "judge_episode": "rejudge",
    "run_control": "rejudge",
    "resimulate": "replay",
    "Episode": "runner",
    "EpisodeFailure": "runner",
    "STREAM_PREFIX": "runner",
    "cosines": "runner",
    "new_episode_id": "runner",
    "run_episode": "runner",
    "stream_id": "runner",
    "EpisodeSetup": "setup",
    "Recording": "setup",
    "EPISODE_OPTIONS": "spec",
    "EpisodeOption": "spec",
    "EpisodeSpec": "spec",
    "OptionError": "spec",
    "episode_values": "spec",
    "MAX_HINTS": "spec",
    "MAX_REASKS": "spec",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
