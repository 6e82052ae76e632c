"""Loading a suite folder: scenarios, prompt versions and the rubric, validated."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tipbench._errors import ConfigError, SuiteError
from tipbench.suite._calibration import CALIBRATION_FILE, CalibrationSet, load_calibration
from tipbench.suite._catalogue import CATALOGUE_FILE, Catalogue, CatalogueFile, catalogue_from_file
from tipbench.suite._files import PromptFile, RubricFile, ScenariosFile, SuiteFile, read_model
from tipbench.suite._population import (
    POPULATION_FILE,
    Population,
    PopulationFile,
    population_from_file,
)
from tipbench.suite._rubric import (
    CRITERIA,
    CRITERION_LEVELS,
    FLAGS,
    Criterion,
    Flag,
    Level,
    Rubric,
)
from tipbench.suite._scenario import (
    PLACEHOLDERS,
    PromptVersion,
    Proposal,
    Scenario,
    content_hash,
    template_placeholders,
)

DEFAULT_SUITE = "tips"


@dataclass(frozen=True)
class Suite:
    """A loaded suite: the fixed scenarios, the prompt versions and the pinned rubric."""

    name: str
    version: str
    description: str
    path: Path
    scenarios: tuple[Scenario, ...]
    prompts: dict[str, PromptVersion]
    rubric: Rubric
    default_prompts: tuple[str, ...]
    catalogue: Catalogue | None = None  # the tip categories policies serve; optional
    calibration: CalibrationSet | None = None  # `calibration.yaml`, if the suite has one
    population: Population | None = None  # `population.yaml`: the policy simulator's users

    @property
    def label(self) -> str:
        """`name@version`, logged with every run."""
        return f"{self.name}@{self.version}"

    @property
    def hash(self) -> str:
        return content_hash(
            [
                [s.content_hash for s in self.scenarios],
                {v: p.template_hash for v, p in self.prompts.items()},
                self.rubric.text(),
            ]
        )

    def select_scenarios(
        self, n_scenarios: int = 0, ids: Iterable[str] = ()
    ) -> tuple[Scenario, ...]:
        """The scenarios named by `ids`, in suite order; without ids, the first
        `n_scenarios` in suite order (0 = all).

        Raises:
            ConfigError: a negative count, or an id the suite does not have.
        """
        if n_scenarios < 0:
            raise ConfigError(f"n_scenarios must be 0 (all) or positive, not {n_scenarios}")
        wanted = set(ids)
        if wanted:
            for scenario_id in sorted(wanted):
                self.scenario(scenario_id)  # an unknown id is refused, named
            return tuple(s for s in self.scenarios if s.id in wanted)
        return self.scenarios[:n_scenarios] if n_scenarios else self.scenarios

    def prompt(self, version: str) -> PromptVersion:
        try:
            return self.prompts[version]
        except KeyError:
            known = ", ".join(sorted(self.prompts))
            raise ConfigError(
                f"unknown prompt version {version!r} in suite {self.name!r} (known: {known})"
            ) from None

    def scenario(self, scenario_id: str) -> Scenario:
        for scenario in self.scenarios:
            if scenario.id == scenario_id:
                return scenario
        raise ConfigError(f"unknown scenario {scenario_id!r} in suite {self.name!r}")


def bundled_suite_path(name: str = DEFAULT_SUITE) -> Path:
    """The folder of a suite that ships inside the package."""
    return Path(str(resources.files("tipbench.suite") / "data" / name))


def working_copy_path(home: Path) -> Path:
    """tipbench's working copy of the bundled suite in its data folder `home`: where
    `tipbench optimize` writes its proposals unless given a suite folder."""
    return home / "suites" / DEFAULT_SUITE


def load_suite(path: str | Path | None = None) -> Suite:
    """Load and validate a suite folder (the bundled `tips` suite by default).

    Raises:
        SuiteError: naming the file and the problem, if anything in the folder is malformed.
    """
    folder = Path(path) if path is not None else bundled_suite_path()
    if not folder.is_dir():
        raise SuiteError(f"{folder}: suite folder not found")
    meta = read_model(folder / "suite.yaml", SuiteFile)
    scenarios = _scenarios(folder / "scenarios.yaml")
    prompts = _prompts(folder / "prompts")
    rubric = _rubric(
        folder / "rubrics" / f"{meta.rubric}.yaml", meta.rubric, {s.id for s in scenarios}
    )
    for version in meta.default_prompts:
        if version not in prompts:
            raise SuiteError(
                f"{folder / 'suite.yaml'}: default_prompts names unknown version {version!r}"
            )
    calibration_file = folder / CALIBRATION_FILE
    calibration = (
        load_calibration(calibration_file, rubric, scenarios) if calibration_file.exists() else None
    )
    catalogue = _catalogue(folder / CATALOGUE_FILE)
    population_file = folder / POPULATION_FILE
    population = None
    if population_file.exists():
        data = read_model(population_file, PopulationFile)
        population = population_from_file(population_file, data, scenarios, catalogue)
    return Suite(
        name=meta.name,
        version=meta.version,
        description=meta.description,
        path=folder,
        scenarios=scenarios,
        prompts=prompts,
        rubric=rubric,
        default_prompts=tuple(meta.default_prompts or _written_by_hand(prompts)),
        catalogue=catalogue,
        calibration=calibration,
        population=population,
    )


def _written_by_hand(prompts: dict[str, PromptVersion]) -> list[str]:
    """The versions a grid runs by default when `suite.yaml` names none: all but those an
    optimization proposed (they run on purpose: the shortlist, by name)."""
    return sorted(v for v, p in prompts.items() if p.proposal is None) or sorted(prompts)


def _unique(file: Path, kind: str, ids: Iterable[str]) -> None:
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise SuiteError(f"{file}: duplicate {kind} id {item!r}")
        seen.add(item)


def _scenarios(file: Path) -> tuple[Scenario, ...]:
    data = read_model(file, ScenariosFile)
    _unique(file, "persona", (p.id for p in data.personas))
    _unique(file, "time slot", (s.id for s in data.time_slots))
    scenarios = tuple(
        Scenario(
            id=f"{persona.id}-{slot.id}",
            persona=persona.id,
            persona_name=persona.name,
            persona_description=persona.description,
            time_slot=slot.id,
            time_slot_label=slot.label,
            local_time=slot.local_time,
            slot_context=slot.context,
            tasks=tuple(persona.tasks),
        )
        for persona in data.personas
        for slot in data.time_slots
    )
    _unique(file, "scenario", (s.id for s in scenarios))
    return scenarios


def _prompts(folder: Path) -> dict[str, PromptVersion]:
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    if not files:
        raise SuiteError(f"{folder}: no prompt versions (expected prompts/<version>.yaml)")
    prompts: dict[str, PromptVersion] = {}
    for file in files:
        data = read_model(file, PromptFile)
        if data.version != file.stem:
            raise SuiteError(f"{file}: version {data.version!r} does not match the file name")
        for part in ("system", "user"):
            try:
                names = template_placeholders(getattr(data, part))
            except ValueError as exc:
                raise SuiteError(f"{file}: {part}: {exc}") from None
            unknown = names - PLACEHOLDERS
            if unknown:
                allowed = ", ".join(f"${n}" for n in sorted(PLACEHOLDERS))
                raise SuiteError(
                    f"{file}: {part}: unknown placeholder ${sorted(unknown)[0]} "
                    f"(allowed: {allowed})"
                )
        proposal = data.proposal
        prompts[data.version] = PromptVersion(
            version=data.version,
            description=data.description,
            system=data.system,
            user=data.user,
            proposal=None if proposal is None else Proposal(**proposal.model_dump()),
        )
    return prompts


def _catalogue(file: Path) -> Catalogue | None:
    return catalogue_from_file(file, read_model(file, CatalogueFile)) if file.exists() else None


def _rubric(file: Path, rubric_id: str, scenario_ids: set[str]) -> Rubric:
    data = read_model(file, RubricFile)
    if data.id != rubric_id:
        raise SuiteError(f"{file}: id {data.id!r} does not match the file name")
    names = tuple(c.name for c in data.criteria)
    if names != CRITERIA:
        raise SuiteError(f"{file}: criteria must be {', '.join(CRITERIA)} in that order")
    if tuple(f.name for f in data.flags) != FLAGS:
        raise SuiteError(f"{file}: flags must be {', '.join(FLAGS)} in that order")
    for criterion in data.criteria:
        if tuple(level.score for level in criterion.levels) != CRITERION_LEVELS:
            raise SuiteError(f"{file}: {criterion.name}: levels must be scores 1 to 5 in order")
        for level in criterion.levels:
            if level.example.scenario not in scenario_ids:
                raise SuiteError(
                    f"{file}: {criterion.name}: level {level.score} example names unknown "
                    f"scenario {level.example.scenario!r}"
                )
    return Rubric(
        id=data.id,
        title=data.title,
        instructions=data.instructions,
        criteria=tuple(
            Criterion(
                name=c.name,
                question=c.question,
                levels=tuple(
                    Level(lv.score, lv.definition, lv.example.scenario, lv.example.tip)
                    for lv in c.levels
                ),
            )
            for c in data.criteria
        ),
        flags=tuple(Flag(f.name, f.definition, f.rule) for f in data.flags),
        max_words=data.rules.max_words,
        max_sentences=data.rules.max_sentences,
        min_words=data.rules.min_words,
        composite_formula=data.composite,
    )
