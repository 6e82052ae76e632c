"""The tip catalogue: the fixed categories (each with example tips) that policies choose among.

A suite carries it as `catalogue.yaml`. It is optional for benchmarking; the serving policies
need one (the bundled `tips` suite has it). It is validated when the suite loads: ids are
identifiers, category and tip ids are unique, every category has at least one example tip.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from tipbench._errors import ConfigError, SuiteError
from tipbench.suite._files import Identifier, Text

CATALOGUE_FILE = "catalogue.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TipFile(_Strict):
    id: Identifier
    text: Text


class CategoryFile(_Strict):
    id: Identifier
    label: Text
    description: Text
    tips: list[TipFile] = Field(min_length=1)


class CatalogueFile(_Strict):
    """`catalogue.yaml`: the categories tips are served from, each with example tips."""

    categories: list[CategoryFile] = Field(min_length=1)


@dataclass(frozen=True)
class CatalogueTip:
    id: str
    category: str
    text: str


@dataclass(frozen=True)
class Category:
    id: str
    label: str
    description: str
    tips: tuple[CatalogueTip, ...]


@dataclass(frozen=True)
class Catalogue:
    """The fixed categories, in file order; a policy keeps one reward model per category."""

    categories: tuple[Category, ...]

    @property
    def category_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.categories)

    def category(self, category_id: str) -> Category:
        for category in self.categories:
            if category.id == category_id:
                return category
        known = ", ".join(self.category_ids)
        raise ConfigError(f"unknown tip category {category_id!r} (known: {known})")

    @property
    def tips(self) -> tuple[CatalogueTip, ...]:
        return tuple(tip for category in self.categories for tip in category.tips)


def catalogue_from_file(file: Path, data: CatalogueFile) -> Catalogue:
    """Check what the schema cannot (unique ids) and build the catalogue.

    Raises:
        SuiteError: naming the file and the duplicated id.
    """
    seen: set[str] = set()
    for category in data.categories:
        if category.id in seen:
            raise SuiteError(f"{file}: duplicate category id {category.id!r}")
        seen.add(category.id)
    tips: set[str] = set()
    for category in data.categories:
        for tip in category.tips:
            if tip.id in tips:
                raise SuiteError(f"{file}: duplicate tip id {tip.id!r}")
            tips.add(tip.id)
    return Catalogue(
        categories=tuple(
            Category(
                id=c.id,
                label=c.label,
                description=c.description,
                tips=tuple(CatalogueTip(t.id, c.id, t.text) for t in c.tips),
            )
            for c in data.categories
        )
    )
