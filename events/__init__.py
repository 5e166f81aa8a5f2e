"""The append-only event log: event types, serialization, the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inquitree import lazy_exports
from inquitree.events import types as _types  # noqa: F401  (registers the episode events)

if TYPE_CHECKING:  # the names as the type checker reads them; at run time each is loaded on first use
    from inquitree.events.backends import backend_named as backend_named
    from inquitree.events.backends.sqlite import sqlite_database as sqlite_database
    from inquitree.events.base import Event as Event
    from inquitree.events.base import adds_only_from as adds_only_from
    from inquitree.events.base import canonical_json as canonical_json
    from inquitree.events.base import decode as decode
    from inquitree.events.base import event_type as event_type
    from inquitree.events.base import parse_json as parse_json
    from inquitree.events.base import registered_types as registered_types
    from inquitree.events.base import upcast as upcast
    from inquitree.events.base import upcaster as upcaster
    from inquitree.events.chain import GENESIS_HASH as GENESIS_HASH
    from inquitree.events.chain import link_problem as link_problem
    from inquitree.events.damage import inspect_file as inspect_file
    from inquitree.events.database import NOTIFICATION_COLUMNS as NOTIFICATION_COLUMNS
    from inquitree.events.database import default_url as default_url
    from inquitree.events.database import epoch_of as epoch_of
    from inquitree.events.database import make_engine as make_engine
    from inquitree.events.database import notifications_sql as notifications_sql
    from inquitree.events.database import redact as redact
    from inquitree.events.database import utc_now as utc_now
    from inquitree.events.errors import ConcurrencyError as ConcurrencyError
    from inquitree.events.errors import StoreDamaged as StoreDamaged
    from inquitree.events.errors import StoreError as StoreError
    from inquitree.events.errors import UnknownEventType as UnknownEventType
    from inquitree.events.errors import UnknownEventVersion as UnknownEventVersion
    from inquitree.events.errors import is_damage as is_damage
    from inquitree.events.guards import restore_guards as restore_guards
    from inquitree.events.migrate import current_revision as current_revision
    from inquitree.events.migrate import upgrade_schema as upgrade_schema
    from inquitree.events.names import CAMPAIGN_PREFIX as CAMPAIGN_PREFIX
    from inquitree.events.names import EPISODE_ID_PATTERN as EPISODE_ID_PATTERN
    from inquitree.events.names import EPISODE_PREFIX as EPISODE_PREFIX
    from inquitree.events.names import IMPORT_PREFIX as IMPORT_PREFIX
    from inquitree.events.names import LABELS_PREFIX as LABELS_PREFIX
    from inquitree.events.names import Cell as Cell
    from inquitree.events.names import agent_name as agent_name
    from inquitree.events.names import campaign_stream as campaign_stream
    from inquitree.events.names import cells_of as cells_of
    from inquitree.events.names import check_episode_id as check_episode_id
    from inquitree.events.names import episode_prefix as episode_prefix
    from inquitree.events.names import episode_stream as episode_stream
    from inquitree.events.names import grid as grid
    from inquitree.events.names import is_episode_id as is_episode_id
    from inquitree.events.roles import grant as grant
    from inquitree.events.signing import KEY_ENV as KEY_ENV
    from inquitree.events.signing import Signer as Signer
    from inquitree.events.signing import Verifier as Verifier
    from inquitree.events.signing import checkpoint_message as checkpoint_message
    from inquitree.events.signing import export_message as export_message
    from inquitree.events.signing import generate as generate
    from inquitree.events.signing import heads_digest as heads_digest
    from inquitree.events.signing import load_keyring as load_keyring
    from inquitree.events.signing import load_signer as load_signer
    from inquitree.events.signing import load_verifier as load_verifier
    from inquitree.events.store import MAX_EVENT_BYTES as MAX_EVENT_BYTES
    from inquitree.events.store import EventStore as EventStore
    from inquitree.events.store import RecordedEvent as RecordedEvent
    from inquitree.events.types import AgentReplied as AgentReplied
    from inquitree.events.types import CampaignAlive as CampaignAlive
    from inquitree.events.types import CampaignEnded as CampaignEnded
    from inquitree.events.types import CampaignStarted as CampaignStarted
    from inquitree.events.types import ConclusionSubmitted as ConclusionSubmitted
    from inquitree.events.types import ControlAnswered as ControlAnswered
    from inquitree.events.types import ControlStarted as ControlStarted
    from inquitree.events.types import DecisionParsed as DecisionParsed
    from inquitree.events.types import DependencyBlocked as DependencyBlocked
    from inquitree.events.types import EpisodeFailed as EpisodeFailed
    from inquitree.events.types import EpisodeImported as EpisodeImported
    from inquitree.events.types import EpisodeInterrupted as EpisodeInterrupted
    from inquitree.events.types import EpisodeResumed as EpisodeResumed
    from inquitree.events.types import EpisodeScored as EpisodeScored
    from inquitree.events.types import EpisodeStarted as EpisodeStarted
    from inquitree.events.types import HintIssued as HintIssued
    from inquitree.events.types import JudgeVerdict as JudgeVerdict
    from inquitree.events.types import LabelRecorded as LabelRecorded
    from inquitree.events.types import LimitReached as LimitReached
    from inquitree.events.types import MatchScored as MatchScored
    from inquitree.events.types import ObservationEmitted as ObservationEmitted
    from inquitree.events.types import ResultDrawn as ResultDrawn
    from inquitree.events.types import Transitioned as Transitioned
    from inquitree.events.types import TurnLimitReached as TurnLimitReached
    from inquitree.events.verify import Anchor as Anchor

_EXPORTS = {
    "backend_named": "backends",
    "restore_guards": "guards",
    "current_revision": "migrate",
    "upgrade_schema": "migrate",
    "sqlite_database": "backends.sqlite",
    "Event": "base",
    "adds_only_from": "base",
    "canonical_json": "base",
    "decode": "base",
    "event_type": "base",
    "parse_json": "base",
    "registered_types": "base",
    "upcast": "base",
    "upcaster": "base",
    "GENESIS_HASH": "chain",
    "link_problem": "chain",
    "inspect_file": "damage",
    "NOTIFICATION_COLUMNS": "database",
    "default_url": "database",
    "epoch_of": "database",
    "make_engine": "database",
    "notifications_sql": "database",
    "redact": "database",
    "utc_now": "database",
    "ConcurrencyError": "errors",
    "StoreDamaged": "errors",
    "StoreError": "errors",
    "UnknownEventType": "errors",
    "UnknownEventVersion": "errors",
    "is_damage": "errors",
    "CAMPAIGN_PREFIX": "names",
    "Cell": "names",
    "EPISODE_ID_PATTERN": "names",
    "EPISODE_PREFIX": "names",
    "IMPORT_PREFIX": "names",
    "LABELS_PREFIX": "names",
    "agent_name": "names",
    "campaign_stream": "names",
    "cells_of": "names",
    "check_episode_id": "names",
    "episode_prefix": "names",
    "episode_stream": "names",
    "grid": "names",
    "is_episode_id": "names",
    "grant": "roles",
    "KEY_ENV": "signing",
    "Signer": "signing",
    "Verifier": "signing",
    "checkpoint_message": "signing",
    "export_message": "signing",
    "heads_digest": "signing",
    "generate": "signing",
    "load_keyring": "signing",
    "load_signer": "signing",
    "load_verifier": "signing",
    "EventStore": "store",
    "MAX_EVENT_BYTES": "store",
    "RecordedEvent": "store",
    "AgentReplied": "types",
    "CampaignAlive": "types",
    "CampaignEnded": "types",
    "CampaignStarted": "types",
    "ConclusionSubmitted": "types",
    "ControlAnswered": "types",
    "ControlStarted": "types",
    "DecisionParsed": "types",
    "DependencyBlocked": "types",
    "EpisodeFailed": "types",
    "EpisodeImported": "types",
    "LabelRecorded": "types",
    "EpisodeInterrupted": "types",
    "EpisodeResumed": "types",
    "EpisodeScored": "types",
    "EpisodeStarted": "types",
    "HintIssued": "types",
    "JudgeVerdict": "types",
    "LimitReached": "types",
    "MatchScored": "types",
    "ObservationEmitted": "types",
    "ResultDrawn": "types",
    "Transitioned": "types",
    "TurnLimitReached": "types",
    "Anchor": "verify",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
