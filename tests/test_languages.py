"""Index terms per language: inflected and partial queries share a term with their memory.

Issue 14 item 5. Each language has its stopwords and Snowball stemmer; outside English a word
also gives a prefix term (``_text`` explains why and how long). The inflection pairs here
are the measurement behind ``PREFIX_LENGTH``: the table in ``_text``'s docstring is recomputed
from them. English terms are pinned literally: stores already hold them.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from _bm25_rows import rows_of

from mainsdk_memory import _text
from mainsdk_memory._errors import InvalidInputError
from mainsdk_memory._stopwords import STOPWORDS
from mainsdk_memory._text import (
    DEFAULT_LANGUAGE,
    LANGUAGES,
    PREFIX_LENGTH,
    PREFIX_MARK,
    check_language,
    index_terms,
    query_terms,
)
from mainsdk_memory.drivers import StoredRow, bm25_rank

# A memory, and a query with one of its words in another form, or a part of a word.
PAIRS: dict[str, list[tuple[str, str]]] = {
    "german": [
        ("Ada wohnt in Berlin.", "wohnen"),
        ("Ben kocht jeden Abend Suppe.", "kochen"),
        ("Die Kinder spielen im Garten Fußball.", "spielt"),
        ("Ada trinkt morgens schwarzen Kaffee.", "trinken"),
        ("Ihre Schwester studiert Medizin in Wien.", "Schwestern"),
        ("Ada liest gern alte Bücher.", "Buch"),
        ("Ada lernt seit zwei Jahren Japanisch.", "lernen"),
        ("Ihr Geburtstag ist im Mai.", "Geburt"),
        ("Er fährt mit dem Fahrrad zur Arbeit.", "fahren"),
    ],
    "french": [
        ("Elle travaille dans une banque à Lyon.", "travailler"),
        ("Ada habite près de la gare.", "habitait"),
        ("Il écrit des lettres à sa grand-mère.", "écrire"),
        ("Ada parle couramment trois langues.", "parler"),
        ("Son frère joue du piano le soir.", "jouer"),
        ("Ada adore les chiens.", "chien"),
        ("Elle a acheté une voiture rouge.", "acheter"),
        ("Ada étudie la médecine à Montpellier.", "médec"),
        ("Ils voyagent souvent en Italie.", "voyage"),
    ],
    "spanish": [
        ("Ada vivía en Madrid.", "vive"),
        ("Trabaja en un hospital de Sevilla.", "trabajar"),
        ("Ada come pescado los viernes.", "comer"),
        ("Su hermana estudia medicina.", "hermanas"),
        ("Ada escribió una novela policíaca.", "escribe"),
        ("Ada habla con su madre cada domingo.", "hablaba"),
        ("Los perros duermen en el jardín.", "perro"),
        ("Ada cocina paella para sus amigos.", "cocinar"),
        ("Ada toca la guitarra eléctrica.", "guitar"),
    ],
    "portuguese": [
        ("Ada mora em Lisboa.", "morar"),
        ("Ela trabalha num hospital.", "trabalhar"),
        ("A irmã da Ada é médica.", "irmãs"),
        ("Ada escreveu um livro de contos.", "escreve"),
        ("Ada fala espanhol fluentemente.", "falar"),
        ("Os cães dormem no jardim.", "cão"),
        ("Ada cozinha todos os domingos.", "cozinhar"),
        ("Ada estuda engenharia no Porto.", "estudar"),
        ("Ada gosta muito de futebol.", "fute"),
    ],
    "russian": [
        ("Ада знает русский язык.", "русская"),
        ("Она работает в больнице.", "работать"),
        ("Ада живёт в Москве.", "живет"),
        ("Ада читает книги по истории.", "книга"),
        ("Ада завела большую собаку.", "собака"),
        ("Её сестра учится в университете.", "сестры"),
        ("Ада говорит по-испански.", "говорить"),
        ("Ада любит плавать.", "плавание"),
        ("Ада изучает математику.", "матем"),
    ],
}

# Everyday memories about other things: a query above sharing a term with one is a false
# match. The first of each language is the unrelated memory no query may match at all.
OTHER_MEMORIES: dict[str, list[str]] = {
    "german": [
        "Das Wetter war gestern kalt und grau.",
        "Der Zug nach Hamburg hatte Verspätung.",
        "Wir haben im Sommer ein Haus am See gemietet.",
        "Ihr Hausarzt heißt Doktor Weber.",
        "Sie kauft jeden Samstag frisches Brot.",
        "Mein Bruder unterrichtet Mathematik in München.",
        "Der Kater schläft auf dem Sofa.",
        "Morgen regnet es wahrscheinlich.",
        "Ada trägt eine Brille.",
    ],
    "french": [
        "Le musée ferme le lundi.",
        "Le train pour Marseille avait du retard.",
        "Nous avons loué une maison au bord de la mer.",
        "Son dentiste s'appelle docteur Martin.",
        "Elle prend du pain frais chaque samedi.",
        "Mon cousin est professeur à Bordeaux.",
        "Le chat dort sur le canapé.",
        "Il pleuvra probablement demain.",
        "Ada porte des lunettes.",
    ],
    "spanish": [
        "El tren sale a las ocho.",
        "El tren a Valencia llegó con retraso.",
        "Alquilamos una casa cerca del mar.",
        "Su dentista se llama doctor García.",
        "Compra pan fresco todos los sábados.",
        "Mi primo es profesor en Bilbao.",
        "El gato duerme en el sofá.",
        "Mañana probablemente lloverá.",
        "Ada comenta las noticias cada mañana.",
    ],
    "portuguese": [
        "O comboio parte às oito.",
        "O comboio para Faro chegou atrasado.",
        "Alugámos uma casa perto do mar.",
        "O dentista dela chama-se doutor Silva.",
        "Compra pão fresco todos os sábados.",
        "O meu primo é professor em Braga.",
        "O gato dorme no sofá.",
        "Amanhã provavelmente vai chover.",
        "Ada usa óculos.",
    ],
    "russian": [
        "Поезд уходит в восемь часов.",
        "Поезд в Петербург опоздал.",
        "Летом мы сняли дом возле моря.",
        "Её врача зовут доктор Иванов.",
        "Она покупает свежий хлеб по субботам.",
        "Мой брат преподаёт в Казани.",
        "Кот спит на диване.",
        "Завтра, наверное, будет дождь.",
        "Ада носит очки.",
    ],
}

# Stems that change inside the word: no prefix length finds these (the documented limit).
KNOWN_MISSES: list[tuple[str, str, str]] = [
    ("german", "Ada hat in Köln gewohnt.", "wohnen"),
    ("french", "Ada vit à Nice.", "vivre"),
    ("spanish", "Ada juega al tenis.", "jugar"),
    ("portuguese", "Ada fez um bolo.", "fazer"),
    ("russian", "Ада пишет письма.", "писать"),
]

# Italian and Dutch have prefix terms too; a few pairs each.
MORE_PAIRS: list[tuple[str, str, str]] = [
    ("italian", "Ada abita a Roma.", "abitare"),
    ("italian", "Lavora in un ospedale.", "lavorava"),
    ("italian", "Sua sorella studia medicina.", "sorelle"),
    ("italian", "Ada scrive romanzi.", "scrivere"),
    ("dutch", "Ada woont in Amsterdam.", "wonen"),
    ("dutch", "Zij werkt in een ziekenhuis.", "werken"),
    ("dutch", "Haar zus studeert geneeskunde.", "zussen"),
    ("dutch", "Ada schrijft boeken.", "schrijven"),
]


def _shares_a_term(memory: str, query: str, language: str) -> bool:
    terms = set(index_terms(memory, language))
    return any(group & terms for group in query_terms(query, language))


# -- English: unchanged ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ada lives in Lisbon.", ["ada", "live", "lisbon"]),
        ("She doesn't like running marathons anymore!", ["doesn", "like", "run", "marathon",
                                                          "anymor"]),
        ("The \ufb01shermen\u2019s boats were repainted in 2024.",
         ["fishermen", "boat", "repaint", "2024"]),
        ("Café society: naïve résumés, STRASSE and Straße.",
         ["café", "societi", "naïv", "résumé", "strass", "strass"]),
        ("Ada 会说中文 and 日本語", ["ada", "会说", "说中", "中文", "日本", "本語"]),
    ],
)
def test_english_terms_are_what_stores_already_hold(text: str, expected: list[str]) -> None:
    assert index_terms(text) == expected
    assert index_terms(text, "english") == expected
    assert query_terms(text, "english") == [{term} for term in expected]


def test_english_has_no_prefix_terms() -> None:
    text = "Ada's grandmother remembers wonderful gardening afternoons in Yorkshire."
    assert not any(term.startswith(PREFIX_MARK) for term in index_terms(text))
    assert all(len(group) == 1 for group in query_terms(text))
    assert DEFAULT_LANGUAGE == "english"


# -- inflected and partial queries ---------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "memory", "query"),
    [(language, memory, query) for language, pairs in PAIRS.items() for memory, query in pairs]
    + MORE_PAIRS,
)
def test_an_inflected_or_partial_query_shares_a_term_with_its_memory(
    language: str, memory: str, query: str
) -> None:
    assert _shares_a_term(memory, query, language)


@pytest.mark.parametrize("language", sorted(PAIRS))
def test_no_query_shares_a_term_with_an_unrelated_memory(language: str) -> None:
    unrelated = OTHER_MEMORIES[language][0]
    for _memory, query in PAIRS[language]:
        assert not _shares_a_term(unrelated, query, language), query


@pytest.mark.parametrize(("language", "memory", "query"), KNOWN_MISSES)
def test_stems_that_change_inside_the_word_are_not_found(
    language: str, memory: str, query: str
) -> None:
    assert not _shares_a_term(memory, query, language)


def test_the_examples_of_the_issue() -> None:
    assert _shares_a_term("Ada wohnt in Berlin", "wohnen", "german")
    assert _shares_a_term("русский язык", "русская", "russian")
    assert _shares_a_term("elle travaille", "travailler", "french")
    assert _shares_a_term("vivía en Madrid", "vive", "spanish")
    assert not _shares_a_term("Ada wohnt in Berlin", "wohnen", "english")  # English as before


def test_prefix_terms_are_the_stems_first_letters_marked() -> None:
    assert index_terms("Ada wohnt in Berlin.", "german") == [
        "ada", "wohnt", PREFIX_MARK + "wohn", "berlin", PREFIX_MARK + "berl",
    ]
    # the query's group: its stem, its stem's prefix, and the prefix of the word as written
    assert query_terms("wohnen", "german") == [{"wohn", PREFIX_MARK + "wohn"}]
    assert query_terms("fute", "portuguese") == [{"fut", PREFIX_MARK + "fute"}]
    assert query_terms("Fährt", "german") == [
        {"fahrt", PREFIX_MARK + "fahr", PREFIX_MARK + "fähr"}
    ]
    # short stems, numbers and words with an underscore get no prefix term
    assert index_terms("Ada come 12345 foo_bars", "spanish") == ["ada", "com", "12345",
                                                                 "foo_bars"]


def test_cjk_runs_are_pairs_in_every_language() -> None:
    for language in LANGUAGES:
        assert index_terms("我会说中文", language) == ["我会", "会说", "说中", "中文"]
    assert index_terms("Berlin中文", "german") == ["berlin", PREFIX_MARK + "berl", "中文"]
    assert query_terms("中文", "german") == [{"中文"}]


# -- ranking: a word's stem and prefix are one query term -----------------------------------

def _rows(texts: list[str], language: str) -> list[StoredRow]:
    return rows_of([index_terms(text, language) for text in texts])


def _ranked(texts: list[str], query: str, language: str) -> list[tuple[str, float]]:
    rows = _rows(texts, language)
    text_of = {row.memory_id: text for row, text in zip(rows, texts, strict=True)}
    found = bm25_rank(rows, query_terms(query, language), 10)
    return [(text_of[row.memory_id], score) for row, score in found]


def test_the_exact_form_ranks_first_then_other_forms_and_nothing_else() -> None:
    # Two memories of one length (5 terms); the older one wins no tie.
    exact, other = "Ada wohnt in Berlin.", "Ben will in Hamburg wohnen."
    texts = [exact, "Das Wetter war kalt.", other]
    for query, first, second in (("wohnt", exact, other), ("wohnen", other, exact)):
        ranked = _ranked(texts, query, "german")
        assert [text for text, _ in ranked] == [first, second]
        assert 1.0 >= ranked[0][1] > ranked[1][1] > 0.0
    # a memory holding both query words, one in another form, beats one word in its own form
    assert [text for text, _ in _ranked(texts, "wohnen Berlin", "german")] == [exact, other]


# -- stopwords ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("german", "Ich bin für dich da und wir sind ÜBER den Berg, DASS daß Für",
         ["berg", PREFIX_MARK + "berg"]),
        ("french", "Ils sont avec nous dans la maison, vous êtes à même", ["maison",
                                                                          PREFIX_MARK + "mais"]),
        ("spanish", "Ella estaba con nosotros en la playa", ["play", PREFIX_MARK + "play"]),
        ("portuguese", "Eles estão com você na praia", ["pra"]),
        ("russian", "Она была с нами в парке, её ещё",  # noqa: RUF001 - Cyrillic, not look-alikes
         ["парк", PREFIX_MARK + "парк"]),
        ("italian", "Noi eravamo con loro nella piazza", ["piazz", PREFIX_MARK + "piaz"]),
        ("dutch", "Wij zijn met hen naar het strand", ["strand", PREFIX_MARK + "stra"]),
        ("english", "We were with them at the beach", ["beach"]),
    ],
)
def test_each_languages_stopwords_are_dropped(
    language: str, text: str, expected: list[str]
) -> None:
    assert index_terms(text, language) == expected


def test_stopword_lists_are_folded_as_text_is_and_of_the_promised_size() -> None:
    assert set(STOPWORDS) == set(LANGUAGES)
    for language, words in STOPWORDS.items():
        assert 100 <= len(words) <= 240, language
        for word in words:
            assert unicodedata.normalize("NFKC", word).casefold() == word
    assert {"für", "dass", "über"} <= STOPWORDS["german"]
    assert {"êtes", "à", "même"} <= STOPWORDS["french"]
    assert "été" not in STOPWORDS["french"]  # also "summer": Snowball leaves it in the index
    assert {"ещё", "еще", "всё", "все"} <= STOPWORDS["russian"]


# -- languages ---------------------------------------------------------------------------


def test_languages_are_checked() -> None:
    assert {"english", "german", "french", "spanish", "portuguese", "russian", "italian",
            "dutch"} <= set(LANGUAGES)
    for language in LANGUAGES:
        assert check_language(language) == language
    for bad in ("klingon", "English", "", None, 3, ["english"], b"english"):
        with pytest.raises(InvalidInputError, match=r"^language is one of: english, ") as error:
            check_language(bad)
        assert "klingon" not in str(error.value)
    with pytest.raises(InvalidInputError):
        index_terms("Ada", "klingon")
    with pytest.raises(InvalidInputError):
        query_terms("Ada", ["german"])  # type: ignore[arg-type]


# -- the measurement in _text's docstring --------------------------------------------------


def _measure(length: int | None, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(_text, "PREFIX_LENGTH", length or 10**6)
    found = total = false = tried = terms = words = 0
    for language, pairs in PAIRS.items():
        for i, (memory, query) in enumerate(pairs):
            total += 1
            found += _shares_a_term(memory, query, language)
            others = [other for j, (other, _) in enumerate(pairs) if j != i]
            for other in others + OTHER_MEMORIES[language]:
                tried += 1
                false += _shares_a_term(other, query, language)
        for memory in [memory for memory, _ in pairs] + OTHER_MEMORIES[language]:
            terms += len(index_terms(memory, language))
            words += len(query_terms(memory, language))
    label = "none (stems)" if length is None else str(length)
    return f"{label:<15}{f'{found}/{total}':<8}{f'{false}/{tried}':<16}{terms / words:.1f}x"


def test_the_measured_table_in_the_docstring_is_what_the_pairs_give(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert PREFIX_LENGTH == 4
    doc = _text.__doc__
    assert doc is not None
    for length in (None, 3, 4, 5, 6):
        row = _measure(length, monkeypatch)
        assert "    " + row + "\n" in doc, row


# -- through the SDK, on every driver -----------------------------------------------------


def test_a_store_in_german_finds_inflected_and_partial_queries(
    store_url: str, keys_path: Path
) -> None:
    from mainsdk_memory import Memory, tenant

    with Memory.open(store_url, keys=keys_path, app="app", language="german") as memory, \
            tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        home = ada.remember("Ada wohnt in Berlin.")
        ada.remember("Ada mag Katzen.")
        assert home.language == "german"
        assert [hit.record.id for hit in ada.recall("wohnen", mode="text")] == [home.id]
        assert ada.revise(home.id, "Ada wohnt in Hamburg.").language == "german"  # kept
        assert [hit.record.id for hit in ada.recall("hamburger", mode="text")] == [home.id]
        # Per call: an English memory in a German store, found by an English query.
        work = ada.remember("Ada works in London.", language="english")
        assert work.language == "english"
        assert [h.record.id for h in ada.recall("working", mode="text", language="english")] == [
            work.id
        ]
        assert "Hamburg" in ada.context("wohnen")


def test_a_bad_language_is_refused_and_changes_nothing(store_url: str, keys_path: Path) -> None:
    from mainsdk_memory import ConfigurationError, Memory, tenant

    with pytest.raises(ConfigurationError, match="language is one of"):
        Memory.open(store_url, keys=keys_path, app="app", language="klingon")
    with Memory.open(store_url, keys=keys_path, app="app") as memory, tenant.use("acme"):
        ada = memory.acting_for("ada", agent="bot")
        with pytest.raises(InvalidInputError, match="language is one of"):
            ada.remember("Ada wohnt in Berlin.", language="klingon")
        assert memory.acting_for("ada", agent="bot").list().items == []
        with pytest.raises(InvalidInputError, match="language is one of"):
            ada.recall("wohnen", language=3)  # type: ignore[arg-type]
        home = ada.remember("Ada lives in Berlin.")
        with pytest.raises(InvalidInputError, match="language is one of"):
            ada.revise(home.id, "Ada lives in Hamburg.", language="klingon")
        assert [r.version for r in ada.history(home.id)] == [1]  # nothing was written
    with pytest.raises(ConfigurationError) as refused:
        Memory.open(store_url, keys=keys_path, app="app", language="klingon")
    assert str(refused.value).count("MAIN-MEM-") == 1  # one error code, not two
