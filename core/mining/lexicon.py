"""A small multilingual lexicon of what developers ask their coding agents: verbs (by the kind of request)
and the things they act on, in the words people use in English, Japanese, Chinese, Korean, Spanish,
Portuguese, French, German, Italian and Russian.

It is what lets "regenerate the API client", "APIクライアントを再生成して" and "重新生成API客户端" be one ask
without a model: each surface form maps to a concept. It is general developer vocabulary, not any project's:
a word it does not know is still a term of its own (its stem, or the CJK run), so a person who keeps using
the same words is grouped with themselves whatever their language.

Surface forms per language:
- English: base words, compared by Porter2 stem (so "regenerating", "regenerated" are "regenerate"); a
  multi-word form ("release notes", "clean up") is matched as a phrase before words are split;
- other Latin and Cyrillic scripts: a prefix ending in `*` ("actualiz*" is actualiza, actualizar, actualizá);
- Japanese, Chinese, Korean: substrings of a run of that script, longest first.
"""

from __future__ import annotations

# Kinds of request. Two asks of different kinds are never one ask ("explain the changelog" is not "update
# the changelog"); within a kind, the verb people pick varies ("update", "fill in", "add entries to").
INQUIRE, CHANGE, RUN, SHIP, REVIEW = "inquire", "change", "run", "ship", "review"

# concept -> (kind, surface forms)
ACTIONS: dict[str, tuple[str, str]] = {
    "explain": (INQUIRE, "explain describe tell summarize summarise clarify understand walk-through read 読ん 読み 読む 阅读 읽 "
                         "説明 解説 教え 要約 まとめ 解释 讲解 说明 介绍 总结 설명 요약 explic* expliqu* erklär* spieg* объясн*"),
    "find": (INQUIRE, "find locate search where grep list show display print 探し 検索 一覧 表示 找 查找 搜索 列出 显示 "
                      "찾 검색 보여 busc* cherch* such* trov* найд* покаж*"),
    "investigate": (INQUIRE, "investigate debug diagnose why figure look dig analyze analyse inspect 調査 調べ 原因 "
                             "デバッグ 分析 调查 排查 分析 为什么 为何 原因 조사 분석 디버그 investig* analys* untersuch* "
                             "разбер* исслед*"),
    "check": (INQUIRE, "check verify confirm validate see 確認 チェック 検証 检查 确认 验证 查看 看看 看一下 확인 검증 "
                       "comprob* verific* vérifi* prüf* controll* провер*"),
    "fix": (CHANGE, "fix repair resolve correct solve sort-out 直し 直す 直して 直せ 直っ 修正 修理 解決 修复 修正 修一下 修好 修 解决 改正 "
                    "고치 수정 해결 arregl* corrig* repar* behebe* behebt korrigier* ripar* исправ* почин*"),
    "update": (CHANGE, "update refresh sync resync synchronize synchronise fill amend revise edit modify adjust tweak change "
                       "retake redo redraw bring-up-to-date 更新 アップデート 同期 撮り直 変え 変更 反映 書き換え 修改 同步 刷新 调整 改 업데이트 "
                       "갱신 동기화 변경 actualiz* atualiz* mettre-à-jour mets-à-jour aktualisier* synchronisier* "
                       "änder* aggiorn* sincroniz* обнов* измен* синхрониз*"),
    "add": (CHANGE, "add append insert include introduce fill-in 追加 追記 加え 入れ 付け 付与 添加 加上 加一个 加个 增加 追加 "
                    "추가 넣 agreg* añad* adicion* ajout* hinzufüg* ergänz* aggiung* добав*"),
    "create": (CHANGE, "create make write draft generate scaffold init initialize compose author produce "
                       "put-together 作成 作っ 作り 作る 書い 書く 書き 生成 新規 起草 写 撰写 创建 新建 生成 编写 "
                       "만들 작성 생성 cre* escrib* escrev* gener* rédig* écri* erstell* schreib* generier* scriv* "
                       "созда* напиш* сгенер*"),
    "regenerate": (CHANGE, "regenerate regen re-generate rebuild recreate recompile re-run-codegen 再生成 作り直 "
                           "再作成 再ビルド 重新生成 再生成 重建 重新创建 재생성 다시-생성 regener* régénér* "
                           "neu-generier* rigener* перегенер* пересобер*"),
    "remove": (CHANGE, "remove delete drop strip purge prune 削除 消し 取り除 外し 删除 删掉 去掉 移除 삭제 제거 "
                       "elimin* borr* remov* supprim* lösch* entfern* rimuov* удал*"),
    "rename": (CHANGE, "rename 名前を変え リネーム 改名 重命名 이름 renombr* renomm* umbenenn* rinomin* переимен*"),
    "move": (CHANGE, "move relocate split extract 移動 移し 分割 切り出 移动 拆分 抽取 이동 분리 mov* déplac* "
                     "verschieb* spost* перемест* раздел*"),
    "refactor": (CHANGE, "refactor restructure reorganize reorganise simplify clean cleanup clean-up tidy "
                         "リファクタ リファクタリング 整理 綺麗 重构 整理 清理 简化 리팩터 리팩토링 정리 refactoriz* "
                         "refactor* nettoy* aufräum* umstrukturier* рефактор*"),
    "upgrade": (CHANGE, "upgrade bump increase raise 上げ アップグレード 升级 提升 加一 升 업그레이드 올려 올리 "
                        "increment 增加 actualice subi* augment* erhöh* aument* повыс* подним*"),
    "downgrade": (CHANGE, "downgrade pin revert-to 下げ ダウングレード 降级 다운그레이드 baj* réduis*"),
    "migrate": (CHANGE, "migrate port switch convert replace move-to 移行 切り替え 置き換え 迁移到 切换 替换 转换 "
                        "마이그레이션하 전환 migr* convert* umstell* перевед* переключ*"),
    "format": (CHANGE, "format reformat prettify 整形 フォーマット 格式化 포맷 formate* formatier*"),
    "seed": (CHANGE, "seed reseed populate load-fixtures 投入 シード 灌 填充 导入 시드 popul* remplir befüll*"),
    "reset": (CHANGE, "reset wipe truncate clear リセット 初期化 重置 清空 초기화 reinici* réinitialis* zurücksetz* "
                      "сброс*"),
    "install": (CHANGE, "install setup set-up configure provision インストール 導入 設定 セットアップ 安装 配置 设置 "
                        "설치 설정 instal* configur* einricht* установ* настро*"),
    "implement": (CHANGE, "implement build-out support enable 実装 対応 实现 支持 实装 구현 implement* mettre-en-œuvre "
                          "реализ*"),
    "translate": (CHANGE, "translate localize localise 翻訳し 翻译一下 번역 tradu* übersetz* переве*"),
    "run": (RUN, "run execute rerun re-run start launch invoke 実行 走らせ 回し 起動 跑 运行 执行 启动 실행 돌려 "
                 "ejecut* execut* lanc* ausführ* esegu* запуст* выполн*"),
    "test": (RUN, "test テストし 测一下 テストを実行 테스트해 test* prob*"),
    "build": (RUN, "build compile ビルド コンパイル 构建 编译 打包 빌드 컴파일 compil* baue* kompilier*"),
    "profile": (RUN, "profile benchmark measure time プロファイル 計測 ベンチマーク 性能分析 测量 프로파일 mesur* "
                     "mess* измер*"),
    "deploy": (SHIP, "deploy ship live go-live rollout roll-out デプロイ 発布 部署 上线 배포 despleg* déploy* deploy* "
                     "bereitstell* развер* задеплой*"),
    "release": (SHIP, "release publish cut-a-release tag リリースし 公開 発行 发布 发版 打标签 릴리스 배포하 lanz* "
                      "publi* veröffentlich* rilasci* выпуст* опубликуй*"),
    "commit": (SHIP, "commit squash コミット 提交 커밋 confirm-cambios закомить*"),
    "push": (SHIP, "push プッシュ 推送 푸시 запуш*"),
    "merge": (SHIP, "merge マージ 合并 병합 fusion* zusammenführ* смерж*"),
    "rebase": (SHIP, "rebase cherry-pick リベース 变基 리베이스"),
    "open_pr": (SHIP, "open-a-pr open-a-pull-request create-a-pr pr-を作 プルリク 提pr 开pr 提个pr pr-올려"),
    "approve": (REVIEW, "approve adopt 採用 承認 採択 采用 批准 승인 채택 aprueb* approuv* genehmig*"),
    "review": (REVIEW, "review audit triage assess evaluate compare grade scrutinise scrutinize scrutiny レビュー 監査 "
                       "トリアージ 評価 比較 审查 审核 评审 分类 评估 比较 리뷰 검토 평가 비교 revis* évalu* überprüf* valut* ревью "
                       "оцен* сравн*"),
}

# concept -> surface forms. Nouns a request acts on.
OBJECTS: dict[str, str] = {
    "api": "api apis エーピーアイ 接口 인터페이스 endpoint endpoints エンドポイント 端点",
    "client": "client clients sdk クライアント 客户端 客戶端 클라이언트 client* cliente*",
    "server": "server backend サーバ サーバー バックエンド 服务器 服务端 后端 서버 백엔드 servid* serveur*",
    "frontend": "frontend ui フロントエンド 前端 界面 画面 프론트엔드 화면",
    "spec": "spec specification openapi swagger schema 仕様 スキーマ 规范 模式 스펙 스키마 esquema schéma",
    "changelog": "changelog change-log changes-file 変更履歴 チェンジログ 更新日志 更新日誌 变更日志 변경로그 변경이력 "
                 "registro-de-cambios journal-des-modifications änderungsprotokoll",
    "release_notes": "release-notes release-note release-announcement リリースノート 発表 发布说明 发布日志 版本说明 "
                     "릴리스노트 notas-de-la-versión notes-de-version",
    "release": "release releases リリース 发布 发版 릴리스",
    "version": "version versions バージョン 版本 版本号 버전 versión versão versione верси*",
    "migration": "migration migrations マイグレーション 迁移 數據遷移 마이그레이션 migración migração",
    "database": "database databases db dbs データベース ＤＢ 数据库 資料庫 开发库 数据 데이터베이스 base-de-datos "
                "datenbank banco-de-dados база-данных",
    "seed_data": "seed-data fixture fixtures 初期データ シードデータ テストデータ 种子数据 测试数据 初始数据 시드데이터 "
                 "données-de-test testdaten",
    "screenshot": "screenshot screenshots screen-shot スクリーンショット スクショ 截图 截屏 屏幕截图 스크린샷 "
                  "captura* capture-d'écran bildschirmfoto",
    "translation": "translation translations i18n l10n locale locales localization localisation 翻訳 ロケール 多言語 "
                   "翻译 多语言 本地化 语言文件 번역 다국어 traducci* tradu* übersetzung* перевод*",
    "dependency": "dependency dependencies deps package packages library libraries lockfile 依存 依存関係 ライブラリ "
                  "パッケージ 依赖 依赖包 第三方库 의존성 패키지 라이브러리 dependenc* abhängigkeit* dipendenz* "
                  "зависимост*",
    "lint": "lint linter linting ruff eslint flake8 pylint golangci-lint clippy mypy リント 静的解析 代码风格 静态检查 "
            "代码检查 린트",
    "docs": "docs doc documentation manual guide wiki ドキュメント 文書 マニュアル 文档 文檔 手册 说明文档 문서 "
            "documentaci* documentação dokumentation документац*",
    "readme": "readme",
    "test": "test tests testcase unittest spec-file テスト 试验 测试 測試 单元测试 테스트 prueba* teste* "
            "тест*",
    "coverage": "coverage カバレッジ 覆盖率 커버리지 cobertura couverture",
    "build": "build builds ビルド 构建 빌드",
    "ci": "ci pipeline workflow workflows github-actions actions ワークフロー パイプライン 流水线 工作流 파이프라인",
    "branch": "branch branches ブランチ 分支 브랜치 rama*",
    "pr": "pr prs pull-request pull-requests mr merge-request プルリク プルリクエスト 合并请求 풀리퀘스트",
    "issue": "issue issues ticket tickets bug-report イシュー チケット 工单 问题单 이슈 티켓",
    "commit_msg": "commit-message commit-messages コミットメッセージ 提交信息 커밋메시지",
    "config": "config configuration settings env dotenv 設定 設定ファイル 配置 配置文件 설정 configuraci* konfiguration",
    "log": "log logs logging ログ 日志 로그 registro* journal* protokoll*",
    "type": "type types typing type-hints annotations 型 型ヒント 类型 类型注解 타입",
    "benchmark": "benchmark benchmarks perf performance ベンチマーク 性能 基准测试 벤치마크 rendimiento",
    "index": "index search-index インデックス 索引 인덱스 índice",
    "cache": "cache caches キャッシュ 缓存 캐시 caché",
    "snapshot": "snapshot snapshots スナップショット 快照 스냅샷",
    "icon": "icon icons favicon logo アイコン ロゴ 图标 아이콘",
    "image": "image images img picture アイコン画像 画像 图片 이미지 imagen",
    "style": "css style styles stylesheet スタイル 样式 스타일",
    "script": "script scripts スクリプト 脚本 스크립트",
    "endpoint_v": "v1 v2 v3",
    "docker": "docker dockerfile container image-build コンテナ 容器 컨테이너",
    "staging": "staging stage ステージング 预发布 预发 스테이징",
    "production": "production prod 本番 生产 线上 프로덕션 운영",
    "dev_env": "dev development local 開発 開発用 ローカル 开发 本地 개발 로컬 desarrollo",
    "error_rate": "error-rate エラー率 错误率 에러율",
    "standup": "standup stand-up daily スタンドアップ 朝会 站会 日报 스탠드업",
    "model": "model models モデル 模型 모델",
}

GENERIC = frozenset("""error errors warning warnings problem problems thing things stuff file files code
    one ones bit bits part parts everything all change changes new latest current next old
    something anything way work job task item items entry entries number list repo project app module 
    function method class line lines section page エラー 警告 問題 ファイル コード 件 错误 警告 问题 文件 代码
    东西 部分 番号 patch パッチ 补丁 에러 경고 문제 파일 코드""".split())
"""Nouns too general to tell one ask from another ("fix the errors"): they weigh little in a comparison."""
GENERIC_WEIGHT = 0.3

# What people say around an ask: greetings, politeness, hedges. Never a term.
FILLER = frozenset("""hey hi hello ok okay alright right so now then again also too please pls plz kindly thanks thank
    thx ty cheers can could would will you your yourself i i'd id i'm im we we're let lets let's me my us our need
    needs want wants like mind get go going gonna wanna quickly quick real really just actually maybe perhaps
    some any the a an this that these those it its there here time when chance before after once more sure
    yes yeah yep no nope lol btw fyi asap soon today tonight tomorrow later first bit little whole
    hola por favor bitte merci s'il vous plaît vielen dank gracias obrigado пожалуйста спасибо""".split())

# Words that end the object of an ask and start its circumstances ("... for the new column", "... from the spec").
CLAUSE_BREAKS = frozenset("""for from in to about with on into onto at by via using so because since while until
    before after when if and or but then also as per than like without except de del en para por pour avec dans
    für mit von zu nach für per con в на для из с""".split())

SHIPPED = frozenset({"build", "release", "version", "app", "frontend", "server"})
"""What is deployed or released is nearly always the current build: for a ship request these say little
("take the build live" and "take the release live" are one ask); where it goes (staging, production) says more."""

WH_WORDS = frozenset("why what how where which who when whats what's how's hows wie warum qué cómo por-qué "
                     "pourquoi comment почему как что".split())

# Japanese and Chinese words of politeness and grammar that are never part of what is asked.
CJK_FILLER = tuple(sorted("""すみません すいません お願いします お願い ください 下さい もらえますか もらえる いただけますか
    いただけ ちょっと 少し 一度 もう一度 また 今回 の件 ほしい 欲しい おいて しておいて してください して ます です
    でした ました 谢谢 请 帮我 帮忙 麻烦 一下 能不能 可以 可不可以 需要 现在 吧 了 的 把 给我 再 一次 这次 所有 全部
    一遍 一下子 一个 一份 这个 那个 下个 这次 부탁 해주세요 해줘 주세요 좀 다시""".split(), key=len, reverse=True))

JA_OBJECT_PARTICLE = "を"
ZH_OBJECT_MARKER = "把"
