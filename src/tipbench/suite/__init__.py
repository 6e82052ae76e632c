"""Suites: the fixed scenarios, prompt versions and pinned rubric a benchmark runs on."""

from tipbench.suite._calibration import (
    MIN_CALIBRATION_TIPS,
    CalibrationSet,
    CalibrationTip,
    load_calibration,
)
from tipbench.suite._catalogue import Catalogue, CatalogueTip, Category
from tipbench.suite._population import (
    POPULATION_FILE,
    Effects,
    PersonaProfile,
    Population,
    Response,
    SimulatedPersona,
)
from tipbench.suite._rubric import (
    COMPOSITE_RANGE,
    CRITERIA,
    FLAGS,
    SCORE_NAMES,
    Criterion,
    Flag,
    Level,
    Rubric,
    composite,
)
from tipbench.suite._scenario import (
    COMPONENTS,
    PLACEHOLDERS,
    Component,
    Message,
    PromptVersion,
    Proposal,
    Scenario,
    content_hash,
    template_placeholders,
)
from tipbench.suite._suite import (
    DEFAULT_SUITE,
    Suite,
    bundled_suite_path,
    load_suite,
    working_copy_path,
)
from tipbench.suite._writing import prompt_file, write_prompt_version

__all__ = [
    "COMPONENTS",
    "COMPOSITE_RANGE",
    "CRITERIA",
    "DEFAULT_SUITE",
    "FLAGS",
    "MIN_CALIBRATION_TIPS",
    "PLACEHOLDERS",
    "POPULATION_FILE",
    "SCORE_NAMES",
    "CalibrationSet",
    "CalibrationTip",
    "Catalogue",
    "CatalogueTip",
    "Category",
    "Component",
    "Criterion",
    "Effects",
    "Flag",
    "Level",
    "Message",
    "PersonaProfile",
    "Population",
    "PromptVersion",
    "Proposal",
    "Response",
    "Rubric",
    "Scenario",
    "SimulatedPersona",
    "Suite",
    "bundled_suite_path",
    "composite",
    "content_hash",
    "load_calibration",
    "load_suite",
    "prompt_file",
    "template_placeholders",
    "working_copy_path",
    "write_prompt_version",
]
