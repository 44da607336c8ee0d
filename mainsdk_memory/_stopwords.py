"""Stopwords per language: the common function words that ``_text`` leaves out of the index.

The English list is the one the index has always used (its terms are already in stores, so
it must not change). The others are taken from the Snowball project's published stop lists
(https://snowballstem.org/algorithms/<language>/stop.txt, BSD licence: Copyright (c) 2001
Dr Martin Porter, Copyright (c) 2002 Richard Boulton; https://snowballstem.org/license.html),
trimmed to the articles, pronouns, prepositions, conjunctions, particles and auxiliaries
(roughly 100 to 200 words a language). Where we left Snowball:

- German: ``machen`` and ``weg`` (also "path") are left out; Snowball's pre-stemming forms
  ``unse``, ``unsem``, ``unsen``, ``unses`` and ``anderr`` are replaced by the real forms of
  ``unser`` (we match words before they are stemmed), and ``dass`` is added beside ``daß``.
- French: ``a`` (has) and ``où`` (where) are added. Snowball's omissions stay omitted:
  ``été`` (also "summer"), ``est`` ("east"), ``son`` ("sound"), ``as``, ``avions`` ...
- Spanish, Portuguese, Italian: the paradigms of the auxiliaries are cut to their common
  forms; Spanish ``tener`` and Italian ``fare`` and ``stare`` (full verbs as often as not)
  are left out; Portuguese ``é`` (is), missing from Snowball's paradigm of ``ser``, is added.
- Russian: the content words of Snowball's list (``человек``, ``жизнь``, ``сказал``,
  ``говорил``, ``хорошо``, numbers ...) are left out, the personal and demonstrative
  pronoun forms of its paradigm notes are added, and words spelt with ``ё`` are listed both
  ways (``ещё`` and ``еще``, ``всё`` and ``все``): NFKC keeps ``ё`` apart from the plain
  letter, and writers use both.
- Dutch: the pronouns Snowball's list lacks are added (``wij``, ``we``, ``jij``, ``jou``,
  ``jouw``, ``jullie``, ``hen``, ``onze``).

Words are matched after NFKC and case folding, so each list is folded the same way when it
is built here: accents stay (``für``, ``êtes``, ``más``), and ``daß`` becomes ``dass``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["STOPWORDS"]


def _words(text: str) -> frozenset[str]:
    """The words of ``text``, normalised as ``_text`` normalises what it reads."""
    return frozenset(unicodedata.normalize("NFKC", word).casefold() for word in text.split())


# Unchanged since the first index: stores already hold the terms it leaves.
_ENGLISH = _words(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's i
    i'd i'll i'm i've if in into is isn't it it's its itself just let's me more most mustn't my
    myself no nor not now of off on once only or other ought our ours ourselves out over own
    same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this
    those through to too under until up very was wasn't we we'd we'll we're we've were weren't
    what what's when when's where where's which while who who's whom why why's will with won't
    would wouldn't you you'd you'll you're you've your yours yourself yourselves s t d ll m re
    ve
    """
)

_GERMAN = _words(
    """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer
    anderes anderm andern anders auch auf aus bei bin bis bist da damit dann der den des dem
    die das daß dass derselbe derselben denselben desselben demselben dieselbe dieselben
    dasselbe dazu dein deine deinem deinen deiner deines denn derer dessen dich dir du dies
    diese diesem diesen dieser dieses doch dort durch ein eine einem einen einer eines einig
    einige einigem einigen einiger einiges einmal er ihn ihm es etwas euer eure eurem euren
    eurer eures für gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich mich mir
    ihr ihre ihrem ihren ihrer ihres euch im in indem ins ist jede jedem jeden jeder jedes jene
    jenem jenen jener jenes jetzt kann kein keine keinem keinen keiner keines können könnte
    man manche manchem manchen mancher manches mein meine meinem meinen meiner meines mit muss
    musste nach nicht nichts noch nun nur ob oder ohne sehr sein seine seinem seinen seiner
    seines selbst sich sie ihnen sind so solche solchem solchen solcher solches soll sollte
    sondern sonst über um und uns unser unsere unserem unseren unserer unseres unter viel vom
    von vor während war waren warst was weil weiter welche welchem welchen welcher welches
    wenn werde werden wie wieder will wir wird wirst wo wollen wollte würde würden zu zum zur
    zwar zwischen
    """
)

_FRENCH = _words(
    """
    au aux avec ce ces dans de des du elle en et eux il je la le leur lui ma mais me même mes
    moi mon ne nos notre nous on ou où par pas pour qu que qui sa se ses sur ta te tes toi ton
    tu un une vos votre vous c d j l à m n s t y a
    étée étées étant suis es êtes sont serai seras sera serons serez seront serais serait
    serions seriez seraient étais était étions étiez étaient fus fut fûmes fûtes furent sois
    soit soyons soyez soient fusse fusses fussions fussiez fussent
    ayant eu eue eues eus ai avons avez ont aurai aurons aurez auront aurais aurait aurions
    auriez auraient avais avait aviez avaient eut eûmes eûtes eurent aie aies ait ayons ayez
    aient eusse eusses eût eussions eussiez eussent
    ceci cela celà cet cette ici ils les leurs quel quels quelle quelles sans soi
    """
)

_SPANISH = _words(
    """
    de la que el en y a los del se las por un para con no una su al lo como más pero sus le
    ya o este sí porque esta entre cuando muy sin sobre también me hasta hay donde quien desde
    todo nos durante todos uno les ni contra otros ese eso ante ellos e esto mí antes algunos
    qué unos yo otro otras otra él tanto esa estos mucho quienes nada muchos cual poco ella
    estar estas algunas algo nosotros
    mi mis tú te ti tu tus ellas nosotras vosotros vosotras os mío mía míos mías tuyo tuya
    tuyos tuyas suyo suya suyos suyas nuestro nuestra nuestros nuestras vuestro vuestra
    vuestros vuestras esos esas
    estoy estás está estamos estáis están esté estés estemos estén estaré estará estarán
    estaría estaba estabas estábamos estaban estuve estuvo estuvieron estando estado estada
    estados estadas
    he has ha hemos han haya hayan habrá habría había habían hubo hubiera habiendo habido
    soy eres es somos son sea sean será serán sería era eras éramos eran fui fue fueron fuera
    fuese siendo sido
    """
)

_PORTUGUESE = _words(
    """
    de a o que e do da em um para com não uma os no se na por mais as dos como mas ao ele das
    à seu sua ou quando muito nos já eu também só pelo pela até isso ela entre depois sem
    mesmo aos seus quem nas me esse eles você essa num nem suas meu às minha numa pelos elas
    qual nós lhe deles essas esses pelas este dele
    tu te vocês vos lhes meus minhas teu tua teus tuas nosso nossa nossos nossas dela delas
    esta estes estas aquele aquela aqueles aquelas isto aquilo
    estou está estamos estão estive esteve estivemos estiveram estava estávamos estavam
    esteja estejam estivesse estiver
    hei há havemos hão houve havia haja hajam houvesse houver
    é sou somos são era éramos eram fui foi fomos foram fora seja sejam fosse fossem for forem
    serei será serão seria seriam
    tenho tem temos têm tinha tínhamos tinham tive teve tivemos tiveram tenha tenham tivesse
    tiver terá teria
    """
)

_RUSSIAN = _words(
    """
    и в во не что он на я с со как а то все всё она так его но да ты к у же вы за бы по только
    ее её мне было вот от меня еще ещё нет о из ему теперь когда даже ну ли если уже или ни быть
    был него до вас нибудь опять уж вам ведь там потом себя ничего ей может они тут где есть
    надо ней для мы тебя их чем была сам чтоб без будто чего раз тоже себе под будет ж тогда
    кто этот того потому этого какой совсем ним здесь этом почти мой тем чтобы нее неё сейчас
    были куда зачем всех никогда можно при об хоть после над больше тот через эти нас про
    всего них какая много разве эту моя впрочем свою этой перед иногда чуть том нельзя такой
    им более всегда конечно всю между
    мной тебе тобой нам нами вами ими оно эта это этим этих этому те та ту той тех тому теми
    весь вся всем всей всему всеми сама само сами
    """  # noqa: RUF001 - Cyrillic words, not look-alikes of Latin ones
)

_ITALIAN = _words(
    """
    ad al allo ai agli all agl alla alle con col coi da dal dallo dai dagli dall dagl dalla
    dalle di del dello dei degli dell degl della delle in nel nello nei negli nell negl nella
    nelle su sul sullo sui sugli sull sugl sulla sulle per tra contro io tu lui lei noi voi
    loro mio mia miei mie tuo tua tuoi tue suo sua suoi sue nostro nostra nostri nostre vostro
    vostra vostri vostre mi ti ci vi lo la li le gli ne il un uno una ma ed se perché anche
    come dov dove che chi cui non più quale quanto quanti quanta quante quello quelli quella
    quelle questo questi questa queste si tutto tutti a c e i l o
    ho hai ha abbiamo avete hanno abbia abbiano avrà avrebbe avevo aveva avevano ebbe avesse
    avendo avuto avuta avuti avute
    sono sei è siamo siete sia siano sarà sarebbe ero eri era eravamo eravate erano fu fosse
    essendo
    """
)

_DUTCH = _words(
    """
    de en van ik te dat die in een hij het niet zijn is was op aan met als voor had er maar om
    hem dan zou of wat mijn men dit zo door over ze zich bij ook tot je mij uit der daar haar
    naar heb hoe heeft hebben deze u want nog zal me zij nu ge geen omdat iets worden toch al
    waren veel meer doen toen moet ben zonder kan hun dus alles onder ja eens hier wie werd
    altijd doch wordt wezen kunnen ons zelf tegen na reeds wil kon niets uw iemand geweest
    andere
    wij we jij jou jouw jullie hen onze
    """
)

STOPWORDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "english": _ENGLISH,
        "german": _GERMAN,
        "french": _FRENCH,
        "spanish": _SPANISH,
        "portuguese": _PORTUGUESE,
        "russian": _RUSSIAN,
        "italian": _ITALIAN,
        "dutch": _DUTCH,
    }
)
"""The stopwords of each supported language, keyed by its Snowball stemmer's name."""
